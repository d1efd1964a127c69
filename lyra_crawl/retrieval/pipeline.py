"""The document index (build, update) and the selector that runs the stages over it. Pure.

    index = DocumentIndex.build(documents, policy)        # or DocumentIndex(policy).add(...)
    selector = DocumentSelector(index, cross_encoder=..., llm=...)
    selection = selector.select("which papers say X?", k=3, conversation="peat")

Adding documents embeds only the new or changed ones; a document added again with the same id
and content is left as it is, with another content it replaces the old one. `version` names the
corpus and the models, so a cached index is known stale when either changes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from tokenizers import Tokenizer

from lyra_crawl.config import RetrievalPolicy
from lyra_crawl.retrieval.cross_encoder import CrossEncoder
from lyra_crawl.retrieval.documents import Chunk, Document, chunk_documents
from lyra_crawl.retrieval.facets import (
    Conversations,
    ConversationsInMemory,
    FacetFilter,
    decide,
    detect,
)
from lyra_crawl.retrieval.fusion import Ranked, fuse
from lyra_crawl.retrieval.keyword import KeywordIndex
from lyra_crawl.retrieval.llm import LlmEndpoint, LlmRater
from lyra_crawl.retrieval.records import Candidate, Selection, StageRun
from lyra_crawl.retrieval.semantic import Embedder, SemanticIndex, load_embedder
from lyra_crawl.retrieval.stages import (
    CrossEncoderScoring,
    FinalChoice,
    KeywordRetrieval,
    LlmRating,
    SemanticRetrieval,
)


@dataclass(frozen=True)
class IndexUpdate:
    added: int
    replaced: int
    unchanged: int
    chunks: int


class DocumentIndex:
    """The documents' chunks, their BM25 index and their vectors."""

    def __init__(self, policy: RetrievalPolicy, embedder: Embedder | None = None) -> None:
        self.policy = policy
        self.embedder = embedder or load_embedder(policy.semantic)
        self.chunks: list[Chunk] = []
        self._live = np.zeros(0, dtype=bool)
        self._documents: dict[str, Document] = {}
        self._rows: dict[str, list[int]] = {}
        self.keyword = KeywordIndex(policy.keyword)
        self.semantic = SemanticIndex(self.embedder, policy.semantic.sentence_weight)
        # Chunking counts the model's own tokens, on a copy that neither pads nor truncates.
        self._tokenizer = Tokenizer.from_str(self.embedder.tokenizer.to_str())
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._version = ""

    @classmethod
    def build(
        cls,
        documents: Iterable[Document],
        policy: RetrievalPolicy | None = None,
        embedder: Embedder | None = None,
    ) -> DocumentIndex:
        index = cls(policy or RetrievalPolicy(), embedder)
        index.add(documents)
        return index

    @property
    def documents(self) -> list[Document]:
        return list(self._documents.values())

    def add(self, documents: Iterable[Document]) -> IndexUpdate:
        new: dict[str, Document] = {}
        unchanged = replaced = 0
        for doc in documents:
            known = self._documents.get(doc.id)
            if known == doc:
                unchanged += 1
                continue
            if known is not None and doc.id not in new:
                replaced += 1
                self._live[self._rows.pop(doc.id)] = False
            new[doc.id] = doc
        policy = self.policy
        chunks = chunk_documents(
            list(new.values()),
            self._tokenizer,
            size=policy.chunk_size,
            overlap=policy.chunk_overlap,
        )
        start = len(self.chunks)
        for offset, chunk in enumerate(chunks):
            self._rows.setdefault(chunk.document.id, []).append(start + offset)
        self._documents.update(new)
        self._version = ""
        self.chunks.extend(chunks)
        self._live = np.concatenate([self._live, np.ones(len(chunks), dtype=bool)])
        self.keyword.add(chunks)
        self.semantic.add(chunks)
        return IndexUpdate(len(new) - replaced, replaced, unchanged, len(chunks))

    def row(self, chunk: Chunk) -> int:
        """The position of a live chunk in `chunks` (and in both retrievers' scores)."""
        return self._rows[chunk.document.id][chunk.index]

    def kept_chunks(self, kept_documents: set[str] | None) -> np.ndarray:
        """Live chunks, of the `kept_documents` only when given."""
        if kept_documents is None:
            return self._live.copy()
        ids = np.array([c.document.id in kept_documents for c in self.chunks], dtype=bool)
        return self._live & ids

    @property
    def models(self) -> dict[str, str]:
        return {"semantic": self.embedder.version, "keyword": self.keyword.version}

    @property
    def version(self) -> str:
        """A digest of the live documents (ids, texts, facets), the models and the chunking."""
        if not self._version:
            self._version = self._digest()
        return self._version

    def _digest(self) -> str:
        digest = hashlib.sha256()
        policy = self.policy
        settings = (policy.chunk_size, policy.chunk_overlap, policy.semantic.sentence_weight)
        digest.update(json.dumps([self.models, settings], sort_keys=True).encode())
        for doc_id in sorted(self._documents):
            doc = self._documents[doc_id]
            facets = sorted((k, str(v)) for k, v in doc.facets.items())
            digest.update(json.dumps([doc.id, doc.title, doc.text, facets]).encode())
        return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Hybrid:
    """The hybrid search's lists: BM25's, the semantic model's and their fusion."""

    keyword: Ranked
    semantic: Ranked
    fused: list[Candidate]


class DocumentSelector:
    """Runs a question through the stages over an index; remembers conversations' facets."""

    def __init__(
        self,
        index: DocumentIndex,
        *,
        cross_encoder: CrossEncoder | None = None,
        llm: LlmEndpoint | None = None,
        conversations: Conversations | None = None,
    ) -> None:
        policy = index.policy
        self.index = index
        self.conversations = conversations or ConversationsInMemory()
        self._keyword = KeywordRetrieval(index.keyword, index.chunks)
        self._semantic = SemanticRetrieval(index.semantic, index.chunks)
        self._cross_encoder = CrossEncoderScoring(cross_encoder, policy.cross_encoder)
        rater = LlmRater(llm, policy.llm.timeout_s) if llm else None
        self._llm = LlmRating(rater, policy.llm)
        self._final = FinalChoice(policy)

    def hybrid(self, text: str, initial_k: int, kept_documents: set[str] | None = None) -> Hybrid:
        """BM25's and the semantic top `initial_k` among the kept documents, and their fusion."""
        usable = self.index.kept_chunks(kept_documents)
        keyword = self._keyword.run(text, usable, initial_k)
        semantic = self._semantic.run(text, usable, initial_k)
        fused = fuse(keyword, semantic, self.index.policy.fusion)
        shares = self.index.keyword.coverage(text, [self.index.row(c.chunk) for c in fused])
        fused = [c.scored(keyword_coverage=s) for c, s in zip(fused, shares, strict=True)]
        return Hybrid(keyword, semantic, fused)

    def select(
        self,
        question: str,
        *,
        k: int | None = None,
        initial_k: int | None = None,
        facets: Sequence[FacetFilter] | None = None,
        conversation: str | None = None,
    ) -> Selection:
        """The top `k` documents for `question` (policy's final_k by default).

        `facets` given are used as named instead of those the question names; `conversation`
        carries the last question's facets to a question that names none.
        """
        policy = self.index.policy
        k = k or policy.final_k
        initial_k = initial_k or policy.initial_k
        named, search_text = detect(question, policy.facets)
        named = tuple(facets) if facets is not None else named
        carried = self.conversations.previous(conversation) if conversation and not named else ()
        decision, kept = decide(named, carried, search_text or question, self.index.documents)
        if conversation:
            self.conversations.remember(conversation, decision.applied)
        kept_ids = (
            {doc.id for doc, keep in zip(self.index.documents, kept, strict=True) if keep}
            if decision.applied
            else None
        )
        found = self.hybrid(decision.search_text, initial_k, kept_ids)
        keyword, semantic, fused = found.keyword, found.semantic, found.fused
        stages = [
            StageRun("facets", bool(decision.applied), decision.describe()),
            StageRun(
                "keyword", True, f"{len(keyword.chunks)} documents", self.index.models["keyword"]
            ),
            StageRun(
                "semantic", True, f"{len(semantic.chunks)} documents", self.index.embedder.version
            ),
            StageRun("fusion", True, f"{len(fused)} candidates"),
        ]
        scored = self._cross_encoder.run(question, fused)
        rated = self._llm.run(question, scored.candidates)
        stages += [scored.run, rated.run]
        choice = self._final.run(rated.candidates, stages, k)
        stages.append(choice.run)
        reason = choice.reason
        if not decision.kept and decision.applied:
            reason = f"the facets keep no document: {decision.note}"
        elif not fused:
            reason = "no document shares a word with the question or is close to it"
        return Selection(
            question=question,
            conversation=conversation,
            facets=decision,
            stages=tuple(stages),
            candidates=choice.candidates,
            hits=choice.hits,
            reason=reason,
            corpus_version=self.index.version,
        )
