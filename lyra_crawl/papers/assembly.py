"""One canonical paper from the records the merge grouped: the richest value of each field.
Pure.

API metadata beats what a SERP snippet shows; a journal DOI beats an arXiv DataCite DOI; the
longest abstract wins. A paper seen by both kinds of source is attributed to ``both``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from lyra_crawl.papers.identifiers import (
    ARXIV_DOI_PREFIX,
    arxiv_id_from_doi,
    normalize_arxiv_id,
    normalize_doi,
    normalize_pmid,
)
from lyra_crawl.papers.records import PaperRecord
from lyra_crawl.papers.title_normalization import normalize_title

__all__ = ["Attribution", "CanonicalPaper", "canonical_paper"]

Attribution = Literal["both", "api_only", "serp_only"]


@dataclass
class CanonicalPaper:
    """One paper with its merged records and the richest value of each field."""

    key: int
    records: list[PaperRecord]
    doi: str | None
    arxiv_id: str | None
    pmid: str | None
    title: str
    normalized_title: str
    year: int | None
    authors: tuple[str, ...]
    venue: str | None
    abstract: str | None
    sources: set[str]
    attribution: Attribution


def canonical_paper(
    key: int, records: list[PaperRecord], normalized: Mapping[str, str]
) -> CanonicalPaper:
    """One paper from its records (`normalized`: their titles normalised, as the index has
    them)."""
    api = [r for r in records if r.kind == "api"]
    serp = [r for r in records if r.kind != "api"]
    ranked = api + serp  # API metadata beats what a SERP snippet shows
    dois = [d for d in (normalize_doi(r.doi) for r in ranked) if d]
    journal_dois = [d for d in dois if not d.startswith(ARXIV_DOI_PREFIX)]
    arxiv_ids = [normalize_arxiv_id(r.arxiv_id) or arxiv_id_from_doi(r.doi) for r in ranked]
    title = next((r.title for r in ranked if r.title.strip()), records[0].title)
    abstracts = [r.abstract for r in api if r.abstract] or [r.abstract for r in serp if r.abstract]
    kinds = {r.kind for r in records}
    attribution: Attribution = (
        "both" if len(kinds) == 2 else "api_only" if "api" in kinds else "serp_only"
    )
    return CanonicalPaper(
        key=key,
        records=records,
        doi=next(iter(journal_dois or dois), None),
        arxiv_id=next((a for a in arxiv_ids if a), None),
        pmid=next((p for p in (normalize_pmid(r.pmid) for r in ranked) if p), None),
        title=title,
        normalized_title=normalized.get(title) or normalize_title(title),
        year=next((r.year for r in ranked if r.year is not None), None),
        authors=next((r.authors for r in ranked if r.authors), ()),
        venue=next((r.venue for r in ranked if r.venue), None),
        abstract=max(abstracts, key=len, default=None),
        sources={r.source for r in records},
        attribution=attribution,
    )
