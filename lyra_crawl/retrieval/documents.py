"""What selection reads: documents with their facets, cut into chunks by tokens. Pure.

A document is anything with an id, a title and a text (a canonical paper's abstract, a search
result's snippet, a BEIR corpus line) plus the facet values it has (`year`, `source`, `venue`,
`site`, `language`, `attribution`, `evidence`, or any other a facet rule names). A text longer
than `chunk_size` tokens of the semantic model's tokenizer is cut into windows of that many
tokens, each `chunk_overlap` tokens into the one before; every chunk starts with its document's
title and names its document, so a hit on a chunk is a hit on its paper.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from lyra_crawl.papers.facets import FacetValue

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str = ""
    facets: Mapping[str, FacetValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Chunk:
    """A window of a document's text (the whole text when it is short), with its title."""

    document: Document
    index: int
    body: str

    @property
    def text(self) -> str:
        return f"{self.document.title}\n{self.body}" if self.body else self.document.title

    def sentences(self) -> list[str]:
        """The title, then the body's sentences: what a one-sentence claim is compared with."""
        return (
            [self.document.title, *_SENTENCE_END.split(self.body)]
            if self.body
            else [self.document.title]
        )


class TokenOffsets(Protocol):
    """A tokenizer's view of a text: where each token starts and ends (tokenizers.Encoding)."""

    @property
    def offsets(self) -> list[tuple[int, int]]: ...


class Tokenizer(Protocol):
    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> list[TokenOffsets]: ...


def chunk_documents(
    documents: Sequence[Document], tokenizer: Tokenizer, *, size: int, overlap: int
) -> list[Chunk]:
    """Each document's chunks, in order: one when its text has at most `size` tokens."""
    encodings = tokenizer.encode_batch([doc.text for doc in documents], add_special_tokens=False)
    chunks: list[Chunk] = []
    for doc, encoding in zip(documents, encodings, strict=True):
        chunks.extend(_windows(doc, encoding.offsets, size, overlap))
    return chunks


def _windows(
    doc: Document, offsets: list[tuple[int, int]], size: int, overlap: int
) -> Iterable[Chunk]:
    if len(offsets) <= size:
        yield Chunk(doc, 0, doc.text.strip())
        return
    step = size - overlap
    for index, start in enumerate(range(0, len(offsets) - overlap, step)):
        window = offsets[start : start + size]
        yield Chunk(doc, index, doc.text[window[0][0] : window[-1][1]].strip())
