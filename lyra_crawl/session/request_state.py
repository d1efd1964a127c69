"""lyra's part of one request: one typed object under one meta key.

Every request lyra sends carries a RequestState under `request.meta["lyra"]`: which query and
engine it serves, which page, and where on the engine it really goes. The politeness chain adds
what one pass through the downloader needs (the breaker's trial, the rate lease, block
detection's verdict for the spider) and takes it back once used. Each pass starts from the
request's identity alone (EngineTurnMiddleware), so a retried or redirected copy carries nothing
stale. Requests without the key are not lyra's: every component lets them pass untouched.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from lyra_crawl.engines.base import ParseResult
    from lyra_crawl.papers.citation_crawl import CitationRequest

META_KEY = "lyra"
# Statuses lyra's readers judge: block pages arrive as 403/429/5xx, API errors as 4xx
# (redirects are still followed, so a 302 to a CAPTCHA page shows up as that page's URL).
HANDLED_STATUSES = [400, 401, 403, 404, 408, 410, 429, 500, 502, 503, 504, 522, 524]


class RequestKind(StrEnum):
    PAGE = "page"
    # A page fetched before page 1 for the tokens it hands over (Startpage's home page).
    TOKEN_PAGE = "token_page"
    # A second request that completes a page (PubMed's esummary for esearch's ids).
    FOLLOW_UP = "follow_up"
    # A request for a paper's references or citations (the query's citation graph).
    CITATION = "citation"


@dataclass
class RequestState:
    query_id: int
    engine: str
    page_number: int
    # The URL as the real engine would see it (the request may go to the simulator).
    engine_url: str
    kind: RequestKind = RequestKind.PAGE
    # For a CITATION request: which paper's which lists it fetches, and how.
    citation: CitationRequest | None = None
    # Set on the way out by the breaker and the rate limit, taken back on the way in.
    trial: bool = False
    lease: float | None = None
    # Block detection's judgement of the response, for the spider (each page parsed once).
    verdict: ParseResult | None = None

    def fresh(self) -> RequestState:
        """The identity alone, for a new pass through the downloader."""
        return replace(self, trial=False, lease=None, verdict=None)

    def take_verdict(self) -> ParseResult | None:
        verdict, self.verdict = self.verdict, None
        return verdict


class RequestRefused(IgnoreRequest):
    """A politeness rule refused the request; `stop_reason` ends its source's pages (or its
    citation lists)."""

    def __init__(self, engine: str, stop_reason: str, message: str) -> None:
        super().__init__(message)
        self.engine = engine
        self.stop_reason = stop_reason


def request_state(meta: dict[str, Any]) -> RequestState | None:
    """The RequestState in a request's (or response's) meta; None for requests not lyra's."""
    state = meta.get(META_KEY)
    return state if isinstance(state, RequestState) else None
