"""What a selection returns and what it records for audit: typed, every stage's score kept. Pure.

`Selection` is the answer (hits, or "no relevant evidence" with the reason) with everything that
led to it; `SelectionRecord` is the part kept for audit (no document text): the question, the
facets detected and carried, each candidate's score at every stage and its final rank, each
stage's model and version or the reason it was skipped, and the corpus version.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from lyra_crawl.retrieval.documents import Chunk
from lyra_crawl.retrieval.facets import FacetDecision


@dataclass(frozen=True)
class StageScores:
    """A candidate's score at each stage; None where the stage did not score it."""

    keyword: float | None = None
    keyword_rank: int | None = None
    # The share of the question's words the chunk has (what the no-CrossEncoder floor reads).
    keyword_coverage: float | None = None
    semantic: float | None = None
    semantic_rank: int | None = None
    fused: float = 0.0
    fused_rank: int = 0
    cross_encoder: float | None = None
    llm: float | None = None
    final: float | None = None


@dataclass(frozen=True)
class Candidate:
    """A document's best chunk for the question, and its scores so far."""

    chunk: Chunk
    scores: StageScores

    @property
    def document_id(self) -> str:
        return self.chunk.document.id

    def scored(self, **scores: float | None) -> Candidate:
        return Candidate(self.chunk, replace(self.scores, **scores))


@dataclass(frozen=True)
class StageRun:
    """One stage of a selection: whether it ran, with which model, or why it was skipped."""

    name: str
    ran: bool
    detail: str = ""
    model: str = ""


@dataclass(frozen=True)
class Selection:
    question: str
    conversation: str | None
    facets: FacetDecision
    stages: tuple[StageRun, ...]
    # Every candidate the fusion gave, in the order of the last stage that ordered them.
    candidates: tuple[Candidate, ...]
    hits: tuple[Candidate, ...]
    # Why there is no relevant evidence (empty when there are hits).
    reason: str
    corpus_version: str

    @property
    def no_relevant_evidence(self) -> bool:
        return not self.hits

    def stage(self, name: str) -> StageRun:
        return next(stage for stage in self.stages if stage.name == name)

    def record(self, selected_at: datetime | None = None) -> SelectionRecord:
        ranks = {hit.document_id: rank for rank, hit in enumerate(self.hits, start=1)}
        return SelectionRecord(
            question=self.question,
            conversation=self.conversation,
            search_text=self.facets.search_text,
            facets_named=tuple(f.describe() for f in self.facets.named),
            facets_carried=tuple(f.describe() for f in self.facets.carried),
            facet_note=self.facets.note,
            documents_kept=self.facets.kept,
            documents_total=self.facets.total,
            stages=self.stages,
            candidates=tuple(
                CandidateRecord(
                    document_id=c.document_id,
                    chunk_index=c.chunk.index,
                    scores=c.scores,
                    final_rank=ranks.get(c.document_id),
                )
                for c in self.candidates
            ),
            reason=self.reason,
            corpus_version=self.corpus_version,
            selected_at=(selected_at or datetime.now(UTC)).isoformat(timespec="seconds"),
        )


@dataclass(frozen=True)
class CandidateRecord:
    document_id: str
    chunk_index: int
    scores: StageScores
    final_rank: int | None


@dataclass(frozen=True)
class SelectionRecord:
    """One selection as kept for audit (phase 2 stores it in the `selections` table)."""

    question: str
    conversation: str | None
    search_text: str
    facets_named: tuple[str, ...]
    facets_carried: tuple[str, ...]
    facet_note: str
    documents_kept: int
    documents_total: int
    stages: tuple[StageRun, ...]
    candidates: tuple[CandidateRecord, ...]
    reason: str
    corpus_version: str
    selected_at: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
