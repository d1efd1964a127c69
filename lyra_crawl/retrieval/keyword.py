"""Keyword search: BM25 over the chunks, with bm25s (sparse matrices, compiled scoring). Pure.

Words are lower-cased, English stopwords dropped and stemmed with the Snowball stemmer
(PyStemmer) unless `keyword.stemmer` is `none`. bm25s indexes a fixed corpus, so adding chunks
rebuilds the index: under a second for 5,000 abstracts, where the semantic stage only embeds
what is new (lyra_crawl.retrieval.semantic). A kept index is saved and loaded in bm25s's own
files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from lyra_crawl.config import KeywordSearch
from lyra_crawl.retrieval.documents import Chunk


def keyword_version(settings: KeywordSearch) -> str:
    """The BM25 library's version and its settings."""
    return f"bm25s-{bm25s.__version__}-k1={settings.k1}-b={settings.b}-{settings.stemmer}"


class KeywordIndex:
    def __init__(self, settings: KeywordSearch) -> None:
        self._settings = settings
        self._texts: list[str] = []
        self._bm25: bm25s.BM25 | None = None
        # The last question's words: scoring and coverage both read them.
        self._asked: tuple[str, list[str]] = ("", [])
        if settings.stemmer == "none":
            self._stemmer, self._stopwords = None, None
        else:
            import Stemmer

            self._stemmer, self._stopwords = Stemmer.Stemmer(settings.stemmer), "en"

    @property
    def version(self) -> str:
        return keyword_version(self._settings)

    def _words(self, texts: list[str]) -> list[list[str]]:
        return bm25s.tokenize(
            texts,
            stopwords=self._stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Index `chunks` after those there (the whole index is built again)."""
        self._texts.extend(chunk.text for chunk in chunks)
        if not self._texts:
            self._bm25 = None
            return
        bm25 = bm25s.BM25(k1=self._settings.k1, b=self._settings.b)
        bm25.index(self._words(self._texts), show_progress=False)
        self._bm25 = bm25

    def keep(self, rows: Sequence[int]) -> None:
        """Only the chunks at `rows`, in that order; the index is built again by the next
        `add`."""
        self._texts = [self._texts[row] for row in rows]

    def save(self, folder: Path) -> Path:
        """bm25s's own files in `folder` (none for an empty index)."""
        folder.mkdir()
        if self._bm25 is not None:
            self._bm25.save(str(folder), show_progress=False)
        return folder

    def load(self, folder: Path, texts: list[str]) -> None:
        """The index `save` wrote, of the chunks whose texts are `texts`."""
        self._texts = list(texts)
        if texts:
            self._bm25 = bm25s.BM25.load(str(folder), show_progress=False)

    def coverage(self, question: str, rows: Sequence[int]) -> list[float]:
        """The share of the question's (stemmed, non-stop) words each chunk `rows` names has."""
        asked = set(self._question_words(question))
        if self._bm25 is None or not asked:
            return [0.0] * len(rows)
        at = np.asarray(rows, dtype=np.int64)
        found = np.zeros(len(at))
        # A chunk has a word exactly when the word alone gives it a BM25 score above 0.
        for token in self._bm25.get_tokens_ids(list(asked)):
            found += self._bm25.get_scores([token])[at] > 0
        return (found / len(asked)).tolist()

    def _question_words(self, question: str) -> list[str]:
        if self._asked[0] != question:
            self._asked = (question, self._words([question])[0])
        return self._asked[1]

    def scores(self, question: str) -> np.ndarray:
        """Each chunk's BM25 score for `question`; 0 for a chunk sharing no word with it."""
        if self._bm25 is None:
            return np.zeros(0, dtype=np.float32)
        ids = self._bm25.get_tokens_ids(self._question_words(question))
        if not ids:
            return np.zeros(len(self._texts), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(ids), dtype=np.float32)
