"""Weighted reciprocal rank fusion of the keyword and semantic lists. Pure.

score(d) = keyword_weight / (keyword_rank_constant + rank in BM25's list)
         + semantic_weight / (semantic_rank_constant + rank in the semantic list),
a list that does not hold d adding nothing (ranks from 1). Ties keep the order of first
appearance, keyword list first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lyra_crawl.config import Fusion
from lyra_crawl.records import StageScores
from lyra_crawl.retrieval.documents import Chunk
from lyra_crawl.retrieval.records import Candidate


@dataclass(frozen=True)
class Ranked:
    """One retriever's list: chunks best first, one per document, with their scores."""

    chunks: tuple[Chunk, ...]
    scores: tuple[float, ...]


def fuse(keyword: Ranked, semantic: Ranked, settings: Fusion) -> list[Candidate]:
    """The fused candidates, best first, each with both lists' scores and ranks."""
    found: dict[str, dict[str, float | int | Chunk]] = {}
    lists = (
        ("keyword", keyword, settings.keyword_weight, settings.keyword_rank_constant),
        ("semantic", semantic, settings.semantic_weight, settings.semantic_rank_constant),
    )
    for name, ranked, weight, constant in lists:
        for rank, (chunk, score) in enumerate(
            zip(ranked.chunks, ranked.scores, strict=True), start=1
        ):
            entry = found.setdefault(chunk.document.id, {"chunk": chunk, "fused": 0.0})
            entry["fused"] += weight / (constant + rank)
            entry[name] = score
            entry[f"{name}_rank"] = rank
    ordered = sorted(found.values(), key=lambda entry: -entry["fused"])
    return [
        Candidate(
            entry.pop("chunk"),
            StageScores(**{k: v for k, v in entry.items()}, fused_rank=position),
        )
        for position, entry in enumerate(ordered, start=1)
    ]


def best_per_document(chunks: Sequence[Chunk], order: Sequence[int], limit: int) -> list[int]:
    """Positions from `order` (best first), keeping each document's first, up to `limit`."""
    seen: set[str] = set()
    kept: list[int] = []
    for position in order:
        document = chunks[position].document.id
        if document not in seen:
            seen.add(document)
            kept.append(position)
            if len(kept) == limit:
                break
    return kept
