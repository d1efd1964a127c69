"""Reading documents and questions from BEIR-shaped JSON Lines files. Pure.

A corpus line is `{"_id": ..., "title": ..., "text": ...}` plus, optionally, facet fields at
the top level (`"year": 2021`, `"source": ["arxiv", "openalex"]`, `"venue": "Nature"`...): every
key but `_id`, `title`, `text` and BEIR's `metadata` whose value is text, a whole number or a
list of texts. A questions line is `{"_id": ..., "text": ...}`. A line that is not so is a
CorpusError naming the file, the line and the fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lyra_crawl.papers.facets import FacetValue
from lyra_crawl.retrieval.documents import Document

_NOT_FACETS = frozenset({"_id", "title", "text", "metadata"})


class CorpusError(ValueError):
    """A corpus or questions file cannot be read; the message names the file, line and fix."""


def read_corpus(path: Path) -> list[Document]:
    documents = []
    for number, line in _lines(path):
        doc_id, title, text = _field(line, "_id", path, number), line.get("title"), line.get("text")
        if not isinstance(title, str) or not isinstance(text, str):
            raise CorpusError(
                f"{path}:{number}: needs text fields 'title' and 'text' (BEIR's corpus shape)"
            )
        facets = {
            key: _facet(value, key, path, number)
            for key, value in line.items()
            if key not in _NOT_FACETS and value is not None
        }
        documents.append(Document(doc_id, title, text, facets))
    return documents


def read_questions(path: Path) -> list[tuple[str, str]]:
    """(id, text) of each question, in file order."""
    return [
        (_field(line, "_id", path, number), _field(line, "text", path, number))
        for number, line in _lines(path)
    ]


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise CorpusError(f"{path}: cannot be read ({exc.strerror}): check the path") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                raise CorpusError(f"{path}:{number}: is not JSON: one JSON object a line") from None
            if not isinstance(line, dict):
                raise CorpusError(f"{path}:{number}: must be a JSON object")
            yield number, line


def _field(line: dict[str, Any], name: str, path: Path, number: int) -> str:
    value = line.get(name)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise CorpusError(f"{path}:{number}: '{name}' is missing or empty: add it")
    return value


def _facet(value: Any, key: str, path: Path, number: int) -> FacetValue:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise CorpusError(
        f"{path}:{number}: facet '{key}' must be text, a whole number or a list of texts"
    )
