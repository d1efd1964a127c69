"""The document index (build, update) and the selector that runs the stages over it. Pure.

    index = DocumentIndex.build(documents, policy)        # or DocumentIndex(policy).add(...)
    selector = DocumentSelector(index, cross_encoder=..., llm=...)
    selection = selector.select("which papers say X?", k=3, conversation="peat")

Adding documents embeds only the new or changed ones; a document added again with the same id
and content is left as it is, with new facets only it takes them (not embedded again), with
another text it replaces the old one; `sync` also removes the documents no longer there.
`version` names the corpus and the models, `settings_key` the models and chunking alone;
`save`/`load` keep an index on disk (lyra_crawl.retrieval.index_cache decides when).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from lyra_crawl.config import RetrievalPolicy
from lyra_crawl.papers.facets import FacetValue
from lyra_crawl.records import StageRun
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
from lyra_crawl.retrieval.keyword import KeywordIndex, keyword_version
from lyra_crawl.retrieval.llm import LlmEndpoint, LlmRater
from lyra_crawl.retrieval.records import Candidate, Selection
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
    """What an update did: documents added, replaced (their text changed: embedded again),
    unchanged, with new facets only (not embedded again), removed; chunks embedded."""

    added: int
    replaced: int
    unchanged: int
    chunks: int
    refaceted: int = 0
    removed: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.replaced or self.refaceted or self.removed)

    def describe(self) -> str:
        parts = [
            f"{count} {what}"
            for count, what in (
                (self.added, "new"),
                (self.replaced, "changed"),
                (self.refaceted, "with new facets"),
                (self.removed, "gone"),
            )
            if count
        ]
        return ", ".join(parts) or "no document changed"


class DocumentIndex:
    """The documents' chunks, their BM25 index and their vectors."""

    def __init__(self, policy: RetrievalPolicy, embedder: Embedder | None = None) -> None:
        self.policy = policy
        self.embedder = embedder or load_embedder(policy.semantic)
        self.chunks: list[Chunk] = []
        self._documents: dict[str, Document] = {}
        self._rows: dict[str, list[int]] = {}
        self.keyword = KeywordIndex(policy.keyword)
        self.semantic = SemanticIndex(self.embedder, policy.semantic.sentence_weight)
        self._version = ""

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        """The semantic model's tokenizer, on a copy that neither pads nor truncates: chunking
        counts the model's own tokens (copied when first needed: a loaded index may never
        chunk)."""
        tokenizer = Tokenizer.from_str(self.embedder.tokenizer.to_str())
        tokenizer.no_padding()
        tokenizer.no_truncation()
        return tokenizer

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
        """Add new documents and replace changed ones; the others stay."""
        return self._update(list(documents), remove_absent=False)

    def sync(self, documents: Iterable[Document]) -> IndexUpdate:
        """Make the index hold `documents` and no other: new and changed ones added, those
        absent removed. The index is then the one `build(documents)` makes."""
        return self._update(list(documents), remove_absent=True)

    def _update(self, documents: list[Document], *, remove_absent: bool) -> IndexUpdate:
        new: dict[str, Document] = {}
        unchanged = refaceted = 0
        dropped: set[str] = set()
        for doc in documents:
            known = self._documents.get(doc.id)
            if known == doc:
                unchanged += 1
            elif known is not None and (known.title, known.text) == (doc.title, doc.text):
                self._refacet(doc)
                refaceted += 1
            else:
                if known is not None:
                    dropped.add(doc.id)
                new[doc.id] = doc
        replaced = len(dropped)
        removed = 0
        if remove_absent:
            present = {doc.id for doc in documents}
            gone = [doc_id for doc_id in self._documents if doc_id not in present]
            removed = len(gone)
            dropped.update(gone)
            for doc_id in gone:
                del self._documents[doc_id]
        if dropped:
            self._drop(dropped)
        policy = self.policy
        chunks = chunk_documents(
            list(new.values()),
            self._tokenizer,
            size=policy.chunk_size,
            overlap=policy.chunk_overlap,
        )
        self._documents.update(new)
        self._version = ""
        self._place(chunks)
        if chunks or dropped:
            self.keyword.add(chunks)
        self.semantic.add(chunks)
        added = len(new) - replaced
        return IndexUpdate(added, replaced, unchanged, len(chunks), refaceted, removed)

    def _refacet(self, doc: Document) -> None:
        """`doc`'s new facets on its document and chunks (its text, and so its vectors, stay)."""
        self._documents[doc.id] = doc
        for row in self._rows[doc.id]:
            chunk = self.chunks[row]
            self.chunks[row] = Chunk(doc, chunk.index, chunk.body)

    def _drop(self, document_ids: set[str]) -> None:
        """Remove the chunks of these documents from the chunks and both retrievers."""
        kept = [row for row, c in enumerate(self.chunks) if c.document.id not in document_ids]
        self.chunks[:] = [self.chunks[row] for row in kept]
        self.keyword.keep(kept)
        self.semantic.keep(np.asarray(kept, dtype=np.int64))
        self._rows = {}
        for row, chunk in enumerate(self.chunks):
            self._rows.setdefault(chunk.document.id, []).append(row)

    def _place(self, chunks: Sequence[Chunk]) -> None:
        """Append `chunks` to the chunks, each document's rows with them."""
        start = len(self.chunks)
        for offset, chunk in enumerate(chunks):
            self._rows.setdefault(chunk.document.id, []).append(start + offset)
        self.chunks.extend(chunks)

    def row(self, chunk: Chunk) -> int:
        """The position of a chunk in `chunks` (and in both retrievers' scores)."""
        return self._rows[chunk.document.id][chunk.index]

    def kept_chunks(self, kept_documents: set[str] | None) -> np.ndarray:
        """Every chunk, or those of the `kept_documents` only when given."""
        if kept_documents is None:
            return np.ones(len(self.chunks), dtype=bool)
        return np.array([c.document.id in kept_documents for c in self.chunks], dtype=bool)

    @property
    def models(self) -> dict[str, str]:
        return {"semantic": self.embedder.version, "keyword": self.keyword.version}

    @property
    def settings_key(self) -> str:
        """A digest of the models (names and versions) and the chunking: an index saved with
        another is not this one's."""
        return settings_digest(self.policy, self.embedder)

    @property
    def version(self) -> str:
        """A digest of the documents (ids, texts, facets), the models and the chunking."""
        if not self._version:
            self._version = self._digest()
        return self._version

    def _digest(self) -> str:
        digest = hashlib.sha256(self.settings_key.encode())
        for doc_id in sorted(self._documents):
            doc = self._documents[doc_id]
            facets = sorted((k, str(v)) for k, v in doc.facets.items())
            digest.update(json.dumps([doc.id, doc.title, doc.text, facets]).encode())
        return digest.hexdigest()[:16]

    # -- kept on disk (lyra_crawl.retrieval.index_cache) ----------------------------------------

    def save(self, folder: Path, name: str) -> list[Path]:
        """Write the index into `folder` as files named after `name`; the files written."""
        documents = folder / f"{name}.documents.json"
        documents.write_text(
            json.dumps(
                {
                    "settings": self.settings_key,
                    "documents": [
                        [d.id, d.title, d.text, dict(d.facets)] for d in self._documents.values()
                    ],
                    "chunks": [[c.document.id, c.index, c.body] for c in self.chunks],
                }
            ),
            encoding="utf-8",
        )
        return [
            documents,
            self.semantic.save(folder / f"{name}.semantic.npz"),
            self.keyword.save(folder / f"{name}.keyword"),
        ]

    @classmethod
    def load(
        cls, folder: Path, name: str, policy: RetrievalPolicy, embedder: Embedder | None = None
    ) -> DocumentIndex:
        """The index `save` wrote; ValueError when it was made with other settings."""
        index = cls(policy, embedder)
        saved = json.loads((folder / f"{name}.documents.json").read_text(encoding="utf-8"))
        if saved["settings"] != index.settings_key:
            raise ValueError("it was made with other models or chunking")
        for doc_id, title, text, facets in saved["documents"]:
            index._documents[doc_id] = Document(doc_id, title, text, _facets(facets))
        documents = index._documents
        chunks = [Chunk(documents[doc_id], n, body) for doc_id, n, body in saved["chunks"]]
        index._place(chunks)
        index.semantic.load(folder / f"{name}.semantic.npz", len(chunks))
        index.keyword.load(folder / f"{name}.keyword", [c.text for c in chunks])
        return index


def settings_digest(policy: RetrievalPolicy, embedder: Embedder) -> str:
    """What an index of `policy` and `embedder` is made with, as a digest: the models' names
    and versions and the chunking."""
    settings = (
        embedder.name,
        {"semantic": embedder.version, "keyword": keyword_version(policy.keyword)},
        policy.chunk_size,
        policy.chunk_overlap,
        policy.semantic.sentence_weight,
    )
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def _facets(saved: dict[str, FacetValue | list[str]]) -> dict[str, FacetValue]:
    """Facets as JSON gave them back: a list is a tuple again."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in saved.items()}


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
