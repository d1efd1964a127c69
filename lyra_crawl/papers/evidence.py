"""What a canonical paper is read from: its abstract, or a page to fetch. Pure.

A paper whose abstract from a source reaches `min_abstract_chars` (engines.yaml
`papers.min_abstract_chars`) has `evidence = "abstract"`. Any other paper has
`evidence = "fetch"`, the best URL to fetch and the reason. URLs are ranked by kind
(`FETCH_KINDS`, best first):

1. `pdf`: an open-access PDF a paper API names (OpenAlex `best_oa_location.pdf_url`, Semantic
   Scholar `openAccessPdf.url`): the full text;
2. `landing`: the paper's landing page as a paper API gives it (OpenAlex
   `primary_location.landing_page_url`, any API record's URL on the publisher's own host);
3. `arxiv`: the arXiv abstract page of its arXiv id;
4. `doi`: its DOI link (the resolver redirects to the publisher's page);
5. `pubmed`: the PubMed page of its PMID;
6. `result`: failing all of these, the URL a search result showed for it.

A paper keeps every kind it has been seen with (`fetch_urls`), so a later record offering a
better kind — a PDF found by another query — takes over, and a fetcher can fall back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from lyra_crawl.papers.canonical import PaperRecord

__all__ = [
    "FETCH_KINDS",
    "Evidence",
    "decide_evidence",
    "fetch_urls",
    "merge_fetch_urls",
]

FETCH_KINDS = ("pdf", "landing", "arxiv", "doi", "pubmed", "result")
# A record URL on one of these hosts is the page of an identifier the record carries anyway,
# built from the identifier instead; the APIs' own pages of a paper (OpenAlex's work page,
# Semantic Scholar's paper page) are an API client's view, not the publisher's landing page,
# and rank with search results: the DOI link leads to the publisher's page instead.
_IDENTIFIER_HOSTS = ("doi.org", "dx.doi.org", "arxiv.org", "pubmed.ncbi.nlm.nih.gov")
_RESULT_HOSTS = ("openalex.org", "semanticscholar.org")

EvidenceKind = Literal["abstract", "fetch"]


@dataclass(frozen=True)
class Evidence:
    """What a paper is read from; `fetch_url` and `reason` only when it must be fetched."""

    evidence: EvidenceKind
    fetch_url: str | None = None
    reason: str | None = None


def fetch_urls(
    records: Iterable[PaperRecord],
    *,
    doi: str | None,
    arxiv_id: str | None,
    pmid: str | None,
) -> dict[str, str]:
    """The first URL of each kind a paper could be fetched from, best kind first.

    `doi`, `arxiv_id` and `pmid` are the paper's normalised identifiers.
    """
    found: dict[str, str] = {}
    for record in records:
        if record.pdf_url:
            found.setdefault("pdf", record.pdf_url)
        if record.url:
            kind = _record_url_kind(record)
            if kind:
                found.setdefault(kind, record.url)
    if arxiv_id:
        found.setdefault("arxiv", f"https://arxiv.org/abs/{arxiv_id}")
    if doi:
        found.setdefault("doi", f"https://doi.org/{doi}")
    if pmid:
        found.setdefault("pubmed", f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/")
    return _ranked(found)


def merge_fetch_urls(*known: Mapping[str, str]) -> dict[str, str]:
    """Several papers' fetch URLs as one paper's: the first URL of each kind, best kind first."""
    merged: dict[str, str] = {}
    for urls in known:
        for kind, url in urls.items():
            merged.setdefault(kind, url)
    return _ranked(merged)


def decide_evidence(
    abstract: str | None, urls: Mapping[str, str], *, min_abstract_chars: int
) -> Evidence:
    """`abstract` when the abstract reaches `min_abstract_chars`, else the best URL to fetch."""
    length = len(" ".join(abstract.split())) if abstract else 0
    if length and length >= min_abstract_chars:
        return Evidence("abstract")
    reason = f"abstract shorter than {min_abstract_chars} chars" if length else "no abstract"
    best = next((urls[kind] for kind in FETCH_KINDS if kind in urls), None)
    if best is None:
        reason += "; no URL to fetch"
    return Evidence("fetch", fetch_url=best, reason=reason)


def _record_url_kind(record: PaperRecord) -> str | None:
    host = (urlsplit(record.url or "").hostname or "").lower().removeprefix("www.")
    if host in _IDENTIFIER_HOSTS:
        return None
    if record.kind == "api" and host not in _RESULT_HOSTS:
        return "landing"
    return "result"


def _ranked(urls: Mapping[str, str]) -> dict[str, str]:
    return {kind: urls[kind] for kind in FETCH_KINDS if kind in urls}
