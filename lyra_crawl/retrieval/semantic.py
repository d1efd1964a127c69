"""Semantic search: each chunk's similarity to the question, by an embedding model. Pure.

A chunk's score is `(1 - w) x cosine(question, chunk) + w x cosine(question, its best
sentence)`, w = `semantic.sentence_weight`: a claim is usually one sentence of an abstract, and
an average over a whole abstract blurs it. The embedded default is WordLlama (static token
embeddings, mean-pooled); a stronger model is an ONNX export by name or path (`OnnxEmbedder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from lyra_crawl.config import EMBEDDED_SEMANTIC_MODEL, SemanticSearch
from lyra_crawl.retrieval.documents import Chunk, Tokenizer
from lyra_crawl.retrieval.models import OnnxTextModel, load_wordllama

# Longest input of an ONNX embedding model, in tokens (BERT-sized models' limit).
ONNX_EMBEDDING_TOKENS = 512


class Embedder(Protocol):
    name: str
    version: str

    @property
    def tokenizer(self) -> Tokenizer: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length float32 row per text."""
        ...


class WordLlamaEmbedder:
    """The embedded default: WordLlama's weights and tokenizer from its wheel."""

    def __init__(self, batch_size: int) -> None:
        self._model = load_wordllama()
        self._batch_size = batch_size
        self.name = EMBEDDED_SEMANTIC_MODEL
        import wordllama

        self.version = f"wordllama-{wordllama.__version__}-l2_supercat-256"

    @property
    def tokenizer(self) -> Tokenizer:
        return self._model.tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._model.embedding.shape[1]), dtype=np.float32)
        # A batch is padded to its longest text: batching texts of like length pads least.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = self._model.embed(
            [texts[i] for i in order], norm=False, batch_size=self._batch_size
        )
        placed = np.empty_like(vectors)
        placed[order] = vectors
        return _unit(placed)


class OnnxEmbedder:
    """A sentence-embedding model exported to ONNX: mean of its token vectors, unit length."""

    def __init__(self, name: str, batch_size: int) -> None:
        self._model = OnnxTextModel.load(name, "semantic.model", ONNX_EMBEDDING_TOKENS)
        self._batch_size = batch_size
        self.name = name
        self.version = self._model.version

    @property
    def tokenizer(self) -> Tokenizer:
        return self._model.tokenizer

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), self._batch_size):
            states, mask = self._model.run(list(texts[start : start + self._batch_size]))
            if states.ndim == 3:  # token vectors: mean over the real tokens
                weights = mask[..., None].astype(np.float32)
                states = (states * weights).sum(1) / np.maximum(weights.sum(1), 1.0)
            rows.append(states.astype(np.float32))
        return _unit(np.concatenate(rows) if rows else np.zeros((0, 1), np.float32))


def _unit(vectors: Any) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-9)


def load_embedder(settings: SemanticSearch) -> Embedder:
    if settings.model == EMBEDDED_SEMANTIC_MODEL:
        return WordLlamaEmbedder(settings.batch_size)
    return OnnxEmbedder(settings.model, settings.batch_size)


class SemanticIndex:
    """The chunks' and their sentences' vectors; grows as chunks are added."""

    def __init__(self, embedder: Embedder, sentence_weight: float) -> None:
        self._embedder = embedder
        self._weight = sentence_weight
        self._chunks = np.zeros((0, 0), dtype=np.float32)
        self._sentences = np.zeros((0, 0), dtype=np.float32)
        # Index of each chunk's first sentence row (sentences of a chunk are contiguous).
        self._starts = np.zeros(0, dtype=np.int64)

    def add(self, chunks: Sequence[Chunk]) -> None:
        if not chunks:
            return
        vectors = self._embedder.embed([chunk.text for chunk in chunks])
        self._chunks = vectors if not len(self._chunks) else np.vstack([self._chunks, vectors])
        if not self._weight:
            return
        per_chunk = [chunk.sentences() for chunk in chunks]
        sentences = self._embedder.embed([s for group in per_chunk for s in group])
        offset = len(self._sentences)
        starts = offset + np.cumsum([0] + [len(group) for group in per_chunk[:-1]])
        self._starts = np.concatenate([self._starts, starts])
        self._sentences = sentences if not offset else np.vstack([self._sentences, sentences])

    def keep(self, rows: np.ndarray) -> None:
        """Only the chunks at `rows`, in that order, and their sentences."""
        self._chunks = self._chunks[rows]
        if not self._weight or not len(self._starts):
            return
        ends = np.append(self._starts[1:], len(self._sentences))
        lengths = ends[rows] - self._starts[rows]
        spans = [np.arange(self._starts[r], ends[r]) for r in rows]
        self._sentences = self._sentences[np.concatenate(spans)] if spans else self._sentences[:0]
        self._starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)[: len(rows)]

    def save(self, path: Path) -> Path:
        np.savez(path, chunks=self._chunks, sentences=self._sentences, starts=self._starts)
        return path

    def load(self, path: Path, chunks: int) -> None:
        """The vectors `save` wrote, of `chunks` chunks; ValueError when they are not."""
        with np.load(path, allow_pickle=False) as saved:
            self._chunks, self._sentences = saved["chunks"], saved["sentences"]
            self._starts = saved["starts"]
        if len(self._chunks) != chunks or (self._weight and len(self._starts) != chunks):
            raise ValueError(f"it holds {len(self._chunks)} chunks' vectors, not {chunks}")

    def scores(self, question: str) -> np.ndarray:
        """Each chunk's score for `question`, in the order the chunks were added."""
        if not len(self._chunks):
            return np.zeros(0, dtype=np.float32)
        vector = self._embedder.embed([question])[0]
        whole = self._chunks @ vector
        if not self._weight:
            return whole
        best_sentence = np.maximum.reduceat(self._sentences @ vector, self._starts)
        return (1.0 - self._weight) * whole + self._weight * best_sentence
