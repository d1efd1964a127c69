"""A result's fields, declared once. Pure.

`ResultFields` is what a result may say about itself beyond its URL and title; every other
shape of a result derives from it: `SerpResult` (what a parser found on a page), the Scrapy item
that carries it through the pipelines (`lyra_crawl.items.ResultItem`), the row that stores it
(`lyra_crawl.records.StoredItem`) and the paper merge's record
(`lyra_crawl.papers.records.PaperRecord`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

# "api": a record from a scholarly API (it carries the paper's metadata); "serp": a web result.
ResultKind = Literal["serp", "api"]


@dataclass(kw_only=True)
class ResultFields:
    """What a result may show beyond URL and title; the paper APIs fill most of it.

    `source_id` is the record's own id at its source (Semantic Scholar paperId, OpenAlex W-id,
    Crossref DOI, arXiv id, PMID); `pdf_url` an open-access PDF of the paper a source names.
    """

    snippet: str = ""
    date: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    abstract: str | None = None
    source_id: str | None = None
    pdf_url: str | None = None


@dataclass
class SerpResult(ResultFields):
    """One organic result as the engine showed it (URL already unwrapped from redirects)."""

    url: str
    title: str


RESULT_FIELD_NAMES = tuple(field.name for field in fields(ResultFields))


def result_fields(result: ResultFields) -> dict[str, Any]:
    """The ResultFields of `result` (any shape deriving from it), by name."""
    return {name: getattr(result, name) for name in RESULT_FIELD_NAMES}
