"""The stages of a selection after the facet filter, each a small component with `run()`. Pure.

Each takes the question and the candidates so far and returns them re-scored (or re-ordered,
or cut) with a `StageRun` saying what it did, with which model, or why it was skipped; a stage
left out changes nothing in the others (Haystack 2.x's components, as STYLE.md takes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lyra_crawl.config import CrossEncoderStage, LlmStage, RetrievalPolicy
from lyra_crawl.records import StageRun
from lyra_crawl.retrieval.cross_encoder import CrossEncoder
from lyra_crawl.retrieval.documents import Chunk
from lyra_crawl.retrieval.fusion import Ranked, best_per_document
from lyra_crawl.retrieval.keyword import KeywordIndex
from lyra_crawl.retrieval.llm import LlmRater, LlmSkipped
from lyra_crawl.retrieval.records import Candidate
from lyra_crawl.retrieval.semantic import SemanticIndex


@dataclass(frozen=True)
class Scored:
    candidates: tuple[Candidate, ...]
    run: StageRun


class KeywordRetrieval:
    """BM25's top `k` documents among the kept chunks; a chunk sharing no word is no hit."""

    def __init__(self, index: KeywordIndex, chunks: Sequence[Chunk]) -> None:
        self._index, self._chunks = index, chunks

    def run(self, text: str, kept: np.ndarray, k: int) -> Ranked:
        scores = self._index.scores(text)
        usable = kept & (scores > 0)
        return _top(self._chunks, scores, usable, k)


class SemanticRetrieval:
    """The embedding model's top `k` documents among the kept chunks."""

    def __init__(self, index: SemanticIndex, chunks: Sequence[Chunk]) -> None:
        self._index, self._chunks = index, chunks

    def run(self, text: str, kept: np.ndarray, k: int) -> Ranked:
        return _top(self._chunks, self._index.scores(text), kept, k)


def _top(chunks: Sequence[Chunk], scores: np.ndarray, usable: np.ndarray, k: int) -> Ranked:
    positions = np.flatnonzero(usable)
    order = positions[np.argsort(-scores[positions], kind="stable")]
    kept = best_per_document(chunks, order.tolist(), k)
    return Ranked(tuple(chunks[p] for p in kept), tuple(float(scores[p]) for p in kept))


class CrossEncoderScoring:
    """Every candidate scored on (question, text) by the CrossEncoder, best first."""

    def __init__(self, model: CrossEncoder | None, settings: CrossEncoderStage) -> None:
        self._model, self._settings = model, settings

    def run(self, question: str, candidates: Sequence[Candidate]) -> Scored:
        if self._model is None:
            reason = "skipped: no cross_encoder.model configured (the fused order decides)"
            return Scored(tuple(candidates), StageRun("cross_encoder", False, reason))
        model = f"{self._model.name} ({self._model.version})"
        if not candidates:
            return Scored((), StageRun("cross_encoder", False, "skipped: no candidate", model))
        scores = self._model.score(question, [c.chunk.text for c in candidates])
        scored = [c.scored(cross_encoder=float(s)) for c, s in zip(candidates, scores, strict=True)]
        scored.sort(key=lambda c: -(c.scores.cross_encoder or 0.0))
        threshold = self._settings.threshold
        kept = tuple(c for c in scored if (c.scores.cross_encoder or 0.0) >= threshold)
        detail = f"scored {len(scored)}; {len(scored) - len(kept)} below {threshold:g} dropped"
        return Scored(kept, StageRun("cross_encoder", True, detail, model))


class LlmRating:
    """The LLM's 0-10 rating of each candidate; its top `keep` go on."""

    def __init__(self, rater: LlmRater | None, settings: LlmStage) -> None:
        self._rater, self._settings = rater, settings

    def run(self, question: str, candidates: Sequence[Candidate]) -> Scored:
        rater, settings = self._rater, self._settings
        if rater is None:
            reason = "skipped: no LLM configured (set LYRA_LLM_URL and LYRA_LLM_MODEL)"
            return Scored(tuple(candidates), StageRun("llm", False, reason))
        model = f"{rater.endpoint.model} at {rater.endpoint.shown_url}"
        if len(candidates) <= settings.skip_at_most:
            reason = f"skipped: {len(candidates)} candidates, at most {settings.skip_at_most}"
            return Scored(tuple(candidates), StageRun("llm", False, reason, model))
        try:
            ratings = rater.rate(question, [c.chunk.text for c in candidates])
        except LlmSkipped as skipped:
            return Scored(tuple(candidates), StageRun("llm", False, f"skipped: {skipped}", model))
        rated = [c.scored(llm=r) for c, r in zip(candidates, ratings, strict=True)]
        rated.sort(key=lambda c: -(c.scores.llm or 0.0))
        kept = tuple(rated[: settings.keep])
        return Scored(kept, StageRun("llm", True, f"rated {len(rated)}; kept {len(kept)}", model))


@dataclass(frozen=True)
class Choice:
    """Every candidate with its final score, best first; the hits; why there are none."""

    candidates: tuple[Candidate, ...]
    hits: tuple[Candidate, ...]
    run: StageRun
    reason: str


class FinalChoice:
    """final = weighted mean of the min-max normalised scores of the stages that ran; top k.

    Without a CrossEncoder its threshold cannot say "no relevant evidence"; two floors do: no
    candidate semantically close (`semantic.floor`) and none sharing most of the question's
    words (`keyword.floor`) means there is none.
    """

    def __init__(self, policy: RetrievalPolicy) -> None:
        self._policy = policy

    def run(self, candidates: Sequence[Candidate], stages: Sequence[StageRun], k: int) -> Choice:
        ran = {stage.name for stage in stages if stage.ran}
        weights = {
            "cross_encoder": self._policy.cross_encoder.weight,
            "llm": self._policy.llm.weight,
        }
        used = {name: w for name, w in weights.items() if name in ran}
        if not used or not sum(used.values()):
            used = {"fused": 1.0}
        columns = {
            name: _normalised([getattr(c.scores, name) or 0.0 for c in candidates]) for name in used
        }
        total = sum(used.values())
        finals = [
            sum(used[name] * columns[name][i] for name in used) / total
            for i in range(len(candidates))
        ]
        order = sorted(range(len(candidates)), key=lambda i: -finals[i])
        final = tuple(candidates[i].scored(final=finals[i]) for i in order)
        how = " + ".join(f"{w:g}·norm({name})" for name, w in used.items())
        run = StageRun("final", True, f"final = ({how}) / {total:g}; top {k}")
        if "cross_encoder" in ran:
            detail = next(s.detail for s in stages if s.name == "cross_encoder")
            reason = (
                "" if final else f"every candidate is below the CrossEncoder threshold ({detail})"
            )
        else:
            reason = self._below_floors(final) if final else ""
        return Choice(final, () if reason else final[:k], run, reason)

    def _below_floors(self, candidates: Sequence[Candidate]) -> str:
        """Why no candidate is relevant by the floors, or "" when one is."""
        semantic_floor = self._policy.semantic.floor
        keyword_floor = self._policy.keyword.floor
        closest = max(
            (c.scores.semantic for c in candidates if c.scores.semantic is not None), default=None
        )
        shared = max(c.scores.keyword_coverage or 0.0 for c in candidates)
        if (closest is not None and closest >= semantic_floor) or shared >= keyword_floor:
            return ""
        close = "none" if closest is None else f"{closest:.2f}"
        return (
            f"no document is semantically close (best {close} < semantic.floor "
            f"{semantic_floor:g}) nor has most of the question's words (best {shared:.0%} < "
            f"keyword.floor {keyword_floor:.0%})"
        )


def _normalised(values: list[float]) -> list[float]:
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]
