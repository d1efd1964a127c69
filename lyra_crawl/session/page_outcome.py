"""What the spider says about a page it parsed, for the pagination middleware to decide on.

The spider yields one PageOutcome with each page's items (and the next page it proposes); the
pagination middleware consumes it: it opens the page in its query's ledger, measures novelty
and harvest, and either lets the proposed request through or records why the source stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lyra_crawl.engines.base import Outcome
from lyra_crawl.session.request_state import RequestKind

# A Scrapy signal the pagination middleware sends once per page it decides on, with `page`
# (the PageOutcome) and `response`: for tools that watch a crawl's pages (`scrapy check-engines`).
page_judged = object()


@dataclass(frozen=True)
class PageOutcome:
    query_id: int
    source: str
    page_number: int
    outcome: Outcome
    detail: str
    results: int
    # The page's URL on the engine, secrets redacted (stored with the page).
    url: str
    kind: RequestKind = RequestKind.PAGE
    # Why no next page was proposed although the page had results (no next-page form).
    no_next_page: str = ""
    # Results the parser dropped, by reason (no_title, not_http, …).
    dropped: Mapping[str, int] = field(default_factory=dict)
