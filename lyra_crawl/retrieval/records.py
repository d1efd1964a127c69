"""What a selection returns and what it records for audit: typed, every stage's score kept. Pure.

`Selection` is the answer (hits, or "no relevant evidence" with the reason) with everything that
led to it; `record()` gives the part kept for audit (no document text), a `SelectionRecord` of
lyra_crawl.records, which a store keeps (`SelectionStore`): the question, the facets
detected and carried, each candidate's score at every stage and its final rank, each stage's
model and version or the reason it was skipped, the corpus it ran on and that corpus's version.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from lyra_crawl.records import (
    CandidateRecord,
    SelectionCorpus,
    SelectionRecord,
    StageRun,
    StageScores,
)
from lyra_crawl.retrieval.collected import stored_paper_id
from lyra_crawl.retrieval.documents import Chunk
from lyra_crawl.retrieval.facets import FacetDecision


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

    def record(
        self, corpus: SelectionCorpus | None = None, selected_at: datetime | None = None
    ) -> SelectionRecord:
        """The audit record; `corpus`: what the documents were (default: given in Python)."""
        corpus = corpus or SelectionCorpus()
        ranks = {hit.document_id: rank for rank, hit in enumerate(self.hits, start=1)}
        moment = (selected_at or datetime.now(UTC)).astimezone(UTC)
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
                    paper_id=stored_paper_id(c.document_id) if corpus.in_store else None,
                )
                for c in self.candidates
            ),
            reason=self.reason,
            corpus=corpus,
            corpus_version=self.corpus_version,
            selected_at=moment.isoformat(timespec="milliseconds"),
        )
