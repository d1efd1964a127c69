"""Items: SerpItem is one result on one page of one source; PaperItem one API paper record."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SerpItem:
    """One result as shown on one page; normalize/dedupe pipelines fill the derived fields."""

    query_id: int
    source: str
    engine: str
    page_number: int
    position: int
    url: str
    title: str
    snippet: str = ""
    date: str | None = None
    normalized_url: str | None = None
    rank: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    relevance: float | None = None


@dataclass
class PaperItem(SerpItem):
    """A result from a scholarly API: a SerpItem plus the paper's metadata for the merge."""

    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    abstract: str | None = None
    source_id: str | None = None
