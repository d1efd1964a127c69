"""Pagination stop logic: decide, page by page, whether the next SERP page is worth fetching.

Pure logic with no Scrapy imports; the pagination spider middleware calls
`PaginationStrategy.should_fetch_next` after each page and drops the proposed next request when
the decision says stop, recording `PaginationDecision.reason` as the source's stop reason.

Governed by `PaginationConfig` (spider arguments `serp_max_pages`, `strategy`, and the novelty /
harvest minimums) and by the engine's own `max_pages` cap from `config/engines.yaml`:

- fixed: fetch pages `serp_page .. max_page` whatever the rates.
- auto: as fixed, and also stop when a page's novelty or harvest rate falls below its minimum.
- exhaustive: ignore the rates and `serp_max_pages`; run to the engine's `max_pages` cap.

Every strategy stops early on a blocked page, a page in a layout the parser does not read, an
error, a spent quota or an empty page. When several stop reasons hold at once, the reported one
is the first of blocked > layout_changed > error > quota > empty_page > max_pages (or
pagination_disabled) > novelty > harvest:
conditions that say the source cannot go on outrank the page limit, which outranks the
judgement calls on the rates. `cancelled` is given to sources still paging when the crawl
closes before they are done (the query's status is then `cancelled` too).
"""

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import Enum

from lyra_crawl.quoting import show

SERP_MAX_PAGES_LIMIT = 10

# Exhaustive crawls of an engine without a `max_pages` cap stop after this many pages: nothing
# says the engine serves more, some engines (Bing) keep repeating their last page instead of
# returning an empty one, and exhaustive ignores novelty, so an unbounded crawl would only burn
# quota. Give the engine a `max_pages` in engines.yaml to crawl deeper.
EXHAUSTIVE_PAGES_WITHOUT_CAP = 10

# Rates are ratios of small counts (results on one page), so genuinely different rates differ by
# far more than this; anything closer to the minimum is float noise (1 - 0.9 != 0.1) and counts
# as being at the minimum, which continues.
_RATE_TOLERANCE = 1e-9


class Strategy(str, Enum):
    FIXED = "fixed"
    AUTO = "auto"
    EXHAUSTIVE = "exhaustive"


class StopReason(str, Enum):
    MAX_PAGES = "max_pages"
    # engines.yaml turns paging off for the engine: only the first page was asked for.
    PAGINATION_DISABLED = "pagination_disabled"
    NOVELTY = "novelty"
    HARVEST = "harvest"
    EMPTY_PAGE = "empty_page"
    BLOCKED = "blocked"
    # The page was neither results nor the engine's no-results page: the parser is stale.
    LAYOUT_CHANGED = "layout_changed"
    ERROR = "error"
    QUOTA = "quota"
    # The crawl closed before the source finished (Ctrl-C, a shutdown); a backend failure that
    # closes it stops the unfinished sources with ERROR.
    CANCELLED = "cancelled"


# The source is done with its query, judged from its pages: a resumed query does not page it
# again. Any other reason (blocked, layout_changed, error, quota, cancelled) may not hold at a
# later try.
FINAL_STOP_REASONS = frozenset(
    reason.value
    for reason in (
        StopReason.MAX_PAGES,
        StopReason.PAGINATION_DISABLED,
        StopReason.NOVELTY,
        StopReason.HARVEST,
        StopReason.EMPTY_PAGE,
    )
)


# A source stops for one of these only on what a page it fetched said: one that fetched no page
# never did (an engine refusing the query before its first request reached no page limit).
AFTER_A_PAGE = FINAL_STOP_REASONS | {StopReason.LAYOUT_CHANGED.value}


# A source stopped for one of these did not run its course: its results are not what the query
# gives, so they are never served from the cache.
CUT_SHORT = frozenset(
    {
        StopReason.BLOCKED,
        StopReason.LAYOUT_CHANGED,
        StopReason.ERROR,
        StopReason.QUOTA,
        StopReason.CANCELLED,
    }
)


@dataclass(frozen=True)
class PaginationConfig:
    serp_max_pages: int = SERP_MAX_PAGES_LIMIT
    min_novelty_rate: float = 0.1
    min_harvest_rate: float = 0.05
    strategy: Strategy = Strategy.AUTO

    def __post_init__(self) -> None:
        try:
            # Accept the plain string a spider argument arrives as.
            object.__setattr__(self, "strategy", Strategy(self.strategy))
        except ValueError:
            choices = "|".join(s.value for s in Strategy)
            raise ValueError(
                f"strategy must be one of {choices} (got {show(self.strategy)}); "
                f"pass e.g. strategy=auto"
            ) from None
        _check_serp_max_pages(self.serp_max_pages, self.strategy)
        for name in ("min_novelty_rate", "min_harvest_rate"):
            rate = getattr(self, name)
            if not 0.0 <= rate <= 1.0:
                raise ValueError(
                    f"{name} must be between 0 and 1 (got {show(rate)}); "
                    "pass a fraction such as 0.1"
                )


def _check_serp_max_pages(serp_max_pages: int, strategy: Strategy) -> None:
    if not isinstance(serp_max_pages, int) or isinstance(serp_max_pages, bool):
        raise TypeError(
            f"serp_max_pages must be a whole number of pages (got {show(serp_max_pages)}); "
            f"pass e.g. serp_max_pages=5"
        )
    if serp_max_pages < 1:
        raise ValueError(
            f"serp_max_pages must be at least 1 (got {serp_max_pages}); "
            f"pass serp_max_pages=1 or more"
        )
    if strategy is not Strategy.EXHAUSTIVE and serp_max_pages > SERP_MAX_PAGES_LIMIT:
        raise ValueError(
            f"serp_max_pages must be between 1 and {SERP_MAX_PAGES_LIMIT} for strategy "
            f"{strategy.value!r} (got {serp_max_pages}); pass serp_max_pages="
            f"{SERP_MAX_PAGES_LIMIT} or fewer, or strategy=exhaustive to follow the engine's "
            f"own max_pages"
        )


def max_page(serp_page: int, serp_max_pages: int) -> int:
    """Last page number a crawl starting at `serp_page` may fetch under `serp_max_pages`."""
    if serp_page < 1:
        raise ValueError(f"serp_page must be at least 1 (got {serp_page}); pages count from 1")
    return serp_page + serp_max_pages - 1


@dataclass(frozen=True)
class PageContext:
    """What the middleware knows about the page just fetched."""

    page_number: int
    serp_page: int
    results_on_page: int
    novelty_rate: float
    harvest_rate: float | None  # None when relevance was not computed
    blocked: bool = False
    layout_changed: bool = False
    error: bool = False
    quota_spent: bool = False
    engine_max_pages: int | None = None
    # engines.yaml has pagination_enabled: false for the engine (engine_max_pages is then the
    # first page).
    pagination_disabled: bool = False


@dataclass(frozen=True)
class PaginationDecision:
    fetch_next: bool
    reason: StopReason | None
    detail: str


class PaginationStrategy:
    def __init__(self, config: PaginationConfig) -> None:
        self.config = config

    def last_page(self, serp_page: int, engine_max_pages: int | None) -> int:
        """Highest page number this crawl may fetch for an engine with the given cap."""
        if engine_max_pages is not None and serp_page > engine_max_pages:
            raise ValueError(
                f"serp_page {serp_page} is beyond the engine's max_pages {engine_max_pages}; "
                f"pass serp_page={engine_max_pages} or lower"
            )
        if self.config.strategy is Strategy.EXHAUSTIVE:
            if engine_max_pages is not None:
                return engine_max_pages
            return max_page(serp_page, EXHAUSTIVE_PAGES_WITHOUT_CAP)
        last = max_page(serp_page, self.config.serp_max_pages)
        return last if engine_max_pages is None else min(last, engine_max_pages)

    def should_fetch_next(self, ctx: PageContext) -> PaginationDecision:
        """Decide whether to fetch page `ctx.page_number + 1`; the first stop reason wins."""
        page = ctx.page_number
        if ctx.blocked:
            return _stop(StopReason.BLOCKED, f"page {page} was blocked")
        if ctx.layout_changed:
            return _stop(StopReason.LAYOUT_CHANGED, f"page {page} is in a layout no rule reads")
        if ctx.error:
            return _stop(StopReason.ERROR, f"page {page} failed")
        if ctx.quota_spent:
            return _stop(StopReason.QUOTA, f"daily quota spent at page {page}")
        if ctx.results_on_page == 0:
            return _stop(StopReason.EMPTY_PAGE, f"page {page} has no results")
        last = self.last_page(ctx.serp_page, ctx.engine_max_pages)
        if page >= last:
            if ctx.pagination_disabled and last < self.last_page(ctx.serp_page, None):
                return _stop(
                    StopReason.PAGINATION_DISABLED,
                    f"paging is off for this engine (engines.yaml): page {page} only",
                )
            return _stop(StopReason.MAX_PAGES, f"reached last page {last} at page {page}")
        if self.config.strategy is Strategy.AUTO:
            if _below(ctx.novelty_rate, self.config.min_novelty_rate):
                return _stop(
                    StopReason.NOVELTY,
                    f"novelty {ctx.novelty_rate:.3g} < {self.config.min_novelty_rate:.3g} "
                    f"at page {page}",
                )
            if ctx.harvest_rate is not None and _below(
                ctx.harvest_rate, self.config.min_harvest_rate
            ):
                return _stop(
                    StopReason.HARVEST,
                    f"harvest {ctx.harvest_rate:.3g} < {self.config.min_harvest_rate:.3g} "
                    f"at page {page}",
                )
        return PaginationDecision(
            fetch_next=True, reason=None, detail=f"page {page} of {last}: fetching page {page + 1}"
        )


def _stop(reason: StopReason, detail: str) -> PaginationDecision:
    return PaginationDecision(fetch_next=False, reason=reason, detail=detail)


def _below(rate: float, minimum: float) -> bool:
    return rate < minimum and not math.isclose(rate, minimum, rel_tol=0.0, abs_tol=_RATE_TOLERANCE)


def calculate_novelty_rate(new_urls: Sequence[str], seen_urls: Collection[str]) -> float:
    """Share of the page's distinct URLs not seen on earlier pages; an empty page gives 0.0.

    `new_urls` are the page's (normalised) URLs and `seen_urls` those of earlier pages only, so
    call this before adding the page to `seen_urls`. A URL repeated within the page counts once
    on both sides of the ratio: an engine listing a result twice neither adds nor costs novelty.
    """
    on_page = set(new_urls)
    if not on_page:
        return 0.0
    unseen = sum(1 for url in on_page if url not in seen_urls)
    return unseen / len(on_page)
