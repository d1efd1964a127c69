"""Which page the papers spider asks for a paper, and which answers are final. Pure.

A paper queued for a fetch (`evidence = fetch`) knows URLs by kind (`fetch_urls`,
lyra_crawl.papers.evidence). Its abstract is read from a page's metadata, so the spider asks
for the best page rather than the PDF: the publisher's landing page, the arXiv abstract page,
the DOI link (the resolver redirects to the publisher's page), the PubMed page, the URL a
search result showed; the PDF or the paper's `fetch_url` only when nothing else is known.

An outcome is final for its URL (`no_metadata`, `not_found`, `robots_disallowed`, …): the
paper's page is not asked for again until its URL changes. A block, an HTTP error or a network
error may pass: the page is asked for again on the next run.
"""

from __future__ import annotations

from collections.abc import Mapping

from lyra_crawl.papers.landing import LandingOutcome

__all__ = ["PAGE_KINDS", "RETRIED_OUTCOMES", "is_due", "outcome_of_status", "page_to_read"]

PAGE_KINDS = ("landing", "arxiv", "doi", "pubmed", "result", "pdf")
RETRIED_OUTCOMES = frozenset(
    {LandingOutcome.BLOCKED, LandingOutcome.HTTP_ERROR, LandingOutcome.NETWORK_ERROR}
)
# A publisher that turns a client away says so with these (an "Access denied" page, a bot wall).
_BLOCK_STATUSES = frozenset({401, 403, 429})
_GONE_STATUSES = frozenset({404, 410})


def page_to_read(fetch_url: str | None, fetch_urls: Mapping[str, str]) -> str | None:
    """The page to read the paper's abstract from, best kind first."""
    for kind in PAGE_KINDS:
        if fetch_urls.get(kind):
            return fetch_urls[kind]
    return fetch_url


def is_due(url: str, last_url: str | None, last_outcome: str | None) -> bool:
    """Whether to ask for `url`: never asked, asked at another URL, or last time it may pass."""
    return last_url != url or last_outcome is None or last_outcome in RETRIED_OUTCOMES


def outcome_of_status(status: int) -> LandingOutcome:
    """What an HTTP error status says of the page."""
    if status in _GONE_STATUSES:
        return LandingOutcome.NOT_FOUND
    if status in _BLOCK_STATUSES:
        return LandingOutcome.BLOCKED
    return LandingOutcome.HTTP_ERROR
