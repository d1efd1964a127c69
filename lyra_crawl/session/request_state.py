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

if TYPE_CHECKING:
    from lyra_crawl.engines.base import ParseResult

META_KEY = "lyra"


class RequestKind(StrEnum):
    PAGE = "page"
    # A page fetched before page 1 for the tokens it hands over (Startpage's home page).
    TOKEN_PAGE = "token_page"
    # A second request that completes a page (PubMed's esummary for esearch's ids).
    FOLLOW_UP = "follow_up"


@dataclass
class RequestState:
    query_id: int
    engine: str
    page_number: int
    # The URL as the real engine would see it (the request may go to the simulator).
    engine_url: str
    kind: RequestKind = RequestKind.PAGE
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


def request_state(meta: dict[str, Any]) -> RequestState | None:
    """The RequestState in a request's (or response's) meta; None for requests not lyra's."""
    state = meta.get(META_KEY)
    return state if isinstance(state, RequestState) else None
