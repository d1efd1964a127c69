"""RunningQuery: everything one query's crawl knows, from its start to its close. Pure.

A crawl holds one per running query (one for `-a query=`, up to `concurrency` for a batch),
keyed by query id in the CrawlSession's registry. The spider, middlewares and pipelines find
the running query of a request or item by its query id and keep the query's state here, never
on themselves or on the spider.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from lyra_crawl.items import ResultItem
from lyra_crawl.paging.ledger import PageLedger
from lyra_crawl.paging.source_paging import SourcePaging
from lyra_crawl.paging.stop_rules import PaginationStrategy, StopReason
from lyra_crawl.papers.citation_crawl import CitationCrawl
from lyra_crawl.papers.collector import QueryPapers
from lyra_crawl.query.arguments import CrawlArguments
from lyra_crawl.query.dedupe import QueryDedupe
from lyra_crawl.records import PageRecord

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompletedPage:
    record: PageRecord
    items: list[ResultItem]


@dataclass
class RunningQuery:
    arguments: CrawlArguments
    query_id: int
    # The query's SERP engine; None when its sources are scholarly APIs only.
    engine: str | None
    # The engines it queries: its SERP engine first, then the scholarly APIs.
    sources: list[str]
    pagination: PaginationStrategy
    paging: dict[str, SourcePaging]
    # Where each source starts: serp_page, or after its last stored page when resumed.
    start_pages: dict[str, int]
    cache_key: str
    batch_entry_id: int | None = None
    # Set when the query was answered from the cache: the query whose results it re-used.
    cached_from: int | None = None
    # The URLs of the last page each source showed, to catch an engine repeating a page.
    previous_urls: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dedupe: QueryDedupe = field(default_factory=QueryDedupe)
    papers: QueryPapers = field(default_factory=QueryPapers)
    # Pages each source has answered so far.
    pages_done: dict[str, int] = field(default_factory=dict)
    stop_reasons: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    # The engines whose refusal (breaker open on a block, quota, hours) stopped a source.
    refused_engines: set[str] = field(default_factory=set)
    # Whether its papers are merged and linked (lyra_crawl.session.closing.save_query_papers).
    papers_saved: bool = False
    # Its citation graph, once its pages are stored (lyra_crawl.session.citations).
    citations: CitationCrawl | None = None
    closing: bool = False

    def __post_init__(self) -> None:
        # The ledger's flush holds the list, not the query: with no reference cycle through
        # it, a closed query's whole state (its papers, seen URLs, pages) is freed as soon as the
        # crawl drops it, not by the cyclic collector's next full scan.
        completed: list[CompletedPage] = []
        self._completed = completed
        self.ledger: PageLedger = PageLedger(
            lambda record, items: completed.append(CompletedPage(record, items))
        )

    @property
    def cache_hit(self) -> bool:
        return self.cached_from is not None

    @property
    def first_page(self) -> int:
        return self.arguments.serp_page

    @property
    def has_completed_pages(self) -> bool:
        return bool(self._completed)

    def take_completed_pages(self) -> list[CompletedPage]:
        """Pages whose every item is kept or dropped, to be stored whole."""
        pages = self._completed.copy()
        self._completed.clear()
        return pages

    def stop(self, source: str, reason: StopReason | str, detail: str) -> None:
        """Why `source` stops paging. Said once per source: a source stops once."""
        reason = StopReason(reason).value
        self.stop_reasons[source] = reason
        if reason == StopReason.ERROR:
            self.errors.setdefault(source, detail)
        logger.info("query %d: %s stops: %s (%s)", self.query_id, source, reason, detail)

    def remaining_requests(self, source: str) -> int:
        """Pages `source` may still ask for (an upper bound: it may stop earlier)."""
        paging = self.paging.get(source)
        if paging is None or source in self.stop_reasons:
            return 0
        last = self.pagination.last_page(self.first_page, paging.page_cap)
        start = self.start_pages.get(source, self.first_page)
        return max(last - start + 1 - self.pages_done.get(source, 0), 0)

    @property
    def paging_over(self) -> bool:
        """Every source has stopped and every page is stored."""
        return (
            not self.closing
            and all(source in self.stop_reasons for source in self.sources)
            and len(self.ledger) == 0
            and not self._completed
        )

    @property
    def done(self) -> bool:
        """Its paging is over and so is its citation graph, if it fetches one: it can close."""
        return self.paging_over and (self.citations is None or self.citations.finished)

    def cancel_unfinished(self, failure: str | None = None) -> None:
        """The crawl closes: sources still paging stop as cancelled, or on the `failure` of a
        backend that closed it (reason `error`)."""
        for source in self.sources:
            if source not in self.stop_reasons:
                if failure is None:
                    self.stop(source, StopReason.CANCELLED, "the crawl closed before this source")
                else:
                    self.stop(source, StopReason.ERROR, failure)
