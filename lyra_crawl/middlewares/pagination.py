"""Pagination: the one place that decides, for every source of every query, when it stops.

A spider middleware. With each page the spider yields its items, a PageOutcome and the next
page it proposes. This middleware opens the page in its query's ledger, measures the page
(lyra_crawl.paging.source_paging: relevance of each result, novelty against every URL the
source showed before — and, with `-a novelty_scope=history`, stored by earlier crawls of the
same query — and harvest) and asks the stop rules (lyra_crawl.paging.stop_rules). When they say
stop, the proposed request is dropped and the reason recorded on the query: blocked,
layout_changed, error, empty_page, max_pages, pagination_disabled, novelty, harvest. A page in a
layout the parser does not read is saved under LYRA_DATA_DIR's `stale/<engine>/`
(lyra_crawl.session.saved_pages) and named in the one WARNING that says the fix. A request
that got no answer ends its source through `stop_after_failure` (refused by quota or breaker:
quota / blocked; a network error: error), called by the spider's errback, which Scrapy does not
pass through spider middlewares; a resumed query's source whose every page is stored already
ends through `stop_with_pages_stored` (max_pages), called by the spider's start.

Governed by the spider arguments `strategy`, `serp_max_pages`, `novelty_scope` and by the
`pagination:` section of engines.yaml (min_novelty_rate, min_harvest_rate,
relevance_threshold). Stats: `lyra/stop_reason/<reason>` once each query closes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.urls import normalize_url
from lyra_crawl.items import ResultItem
from lyra_crawl.paging.stop_rules import StopReason
from lyra_crawl.records import BackendError, PageRecord
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.page_outcome import PageOutcome, page_judged
from lyra_crawl.session.request_state import (
    RequestKind,
    RequestRefused,
    RequestState,
    request_state,
)
from lyra_crawl.session.running_query import RunningQuery
from lyra_crawl.session.saved_pages import page_suffix, save_page, stale_page_path
from lyra_crawl.session.settling import settle, settle_later

logger = logging.getLogger(__name__)


class PaginationMiddleware:
    def __init__(self, session: CrawlSession) -> None:
        self.session = session

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(CrawlSession.of(crawler))

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        outputs = [output async for output in result]
        page = next((o for o in outputs if isinstance(o, PageOutcome)), None)
        query = self.session.query(page.query_id) if page is not None else None
        if page is None or query is None:
            for output in outputs:
                if not isinstance(output, PageOutcome):
                    yield output
            return
        items = [o for o in outputs if isinstance(o, ResultItem)]
        proposed = [o for o in outputs if _is_next_page(o, page)]
        self.session.crawler.signals.send_catch_log(page_judged, page=page, response=response)
        if page.kind is RequestKind.TOKEN_PAGE:
            go_on = self._after_token_page(query, page)
        else:
            go_on = await self._after_page(query, page, items, bool(proposed), response)
        for output in outputs:
            if isinstance(output, PageOutcome) or (output in proposed and not go_on):
                continue
            yield output

    async def _after_page(
        self,
        query: RunningQuery,
        page: PageOutcome,
        items: list[ResultItem],
        proposed: bool,
        response: Response,
    ) -> bool:
        """Measure the page, open it in the ledger, and decide on the next one."""
        source = page.source
        paging = query.paging[source]
        query.pages_done[source] = query.pages_done.get(source, 0) + 1
        for item in items:
            item.normalized_url = normalize_url(item.url)  # the pipelines reuse it
        figures = paging.measure(
            [item.normalized_url for item in items], [(item.title, item.snippet) for item in items]
        )
        for item, score in zip(items, figures.relevance, strict=True):
            item.relevance = score
        record = PageRecord(
            query_id=query.query_id,
            source=source,
            page_number=page.page_number,
            outcome=page.outcome.value,
            results=page.results,
            url=page.url,
        )
        query.ledger.open_page(record, expected=len(items))
        query.ledger.annotate(
            source,
            page.page_number,
            novelty_rate=figures.novelty_rate,
            harvest_rate=figures.harvest_rate,
        )
        self._count(page)
        decision = paging.decide(
            query.pagination,
            page_number=page.page_number,
            results=len(items),
            figures=figures,
            blocked=page.outcome.is_block,
            layout_changed=page.outcome is Outcome.LAYOUT_CHANGED,
            error=page.outcome is Outcome.ERROR,
        )
        go_on = decision.fetch_next and proposed
        if not decision.fetch_next:
            self._stop(query, page, decision.reason, decision.detail, response)
        elif not proposed:
            query.stop(source, StopReason.EMPTY_PAGE, page.no_next_page or decision.detail)
        if not items:
            await settle(self.session, query)  # nothing will pass the pipelines for this page
        return go_on

    def _after_token_page(self, query: RunningQuery, page: PageOutcome) -> bool:
        self.session.stats.inc_value(f"lyra/{page.source}/token_page/{page.outcome.value}")
        if page.outcome is Outcome.OK:
            return True
        logger.warning("%s token page %s: %s", page.source, page.outcome.value, page.detail)
        reason = StopReason.BLOCKED if page.outcome.is_block else StopReason.ERROR
        query.stop(page.source, reason, page.detail)
        settle_later(self.session, query)
        return False

    def _stop(
        self,
        query: RunningQuery,
        page: PageOutcome,
        reason: StopReason | None,
        detail: str,
        response: Response,
    ) -> None:
        first = query.first_page
        if reason is StopReason.BLOCKED:
            logger.warning(
                "%s blocked page %d (%s: %s); %s",
                page.source,
                page.page_number,
                page.outcome.value,
                page.detail,
                kept_pages(first, page.page_number - 1),
            )
        elif reason is StopReason.LAYOUT_CHANGED:
            logger.warning(
                "%s page %d is in a layout the parser does not read (%s): %s",
                page.source,
                page.page_number,
                page.detail,
                self._keep_stale_page(query, page, response),
            )
            detail = f"page {page.page_number}: {page.detail}"
        elif reason is StopReason.ERROR:
            logger.error("%s page %d failed: %s", page.source, page.page_number, page.detail)
            detail = f"page {page.page_number}: {page.detail}"
        query.stop(page.source, reason or StopReason.ERROR, detail)

    def _keep_stale_page(self, query: RunningQuery, page: PageOutcome, response: Response) -> str:
        """Save the page for parse-serp; the fix to make, naming the saved file."""
        engine, number = page.source, page.page_number
        content_type = response.headers.get("Content-Type", b"").decode("latin-1")
        path = stale_page_path(
            self.session.data_dir,
            engine,
            query.query_id,
            number,
            page_suffix(content_type),
            datetime.now(UTC),
        )
        fix = f"update {engine}'s parse rules in search_parsers.yaml"
        try:
            save_page(path, response.body)
        except OSError as exc:
            return f"{fix} (the page could not be saved: {exc})"
        return f"{fix} until `scrapy parse-serp {engine} {path} --page {number}` reads it"

    def _count(self, page: PageOutcome) -> None:
        stats = self.session.stats
        stats.inc_value(f"lyra/{page.source}/pages")
        stats.inc_value(f"lyra/{page.source}/outcome/{page.outcome.value}")
        stats.inc_value(f"lyra/{page.source}/results", page.results)
        for reason, count in page.dropped.items():
            stats.inc_value(f"lyra/dropped/{reason}", count)


def _is_next_page(output: Any, page: PageOutcome) -> bool:
    if not isinstance(output, Request):
        return False
    state = request_state(output.meta)
    return state is not None and state.query_id == page.query_id and state.engine == page.source


def stop_after_failure(
    crawl: CrawlSession, query: RunningQuery, state: RequestState, failure: Failure
) -> None:
    """End the source of a request that got no answer: refused, or failed on the network."""
    engine, page_number = state.engine, state.page_number
    first = query.first_page
    message = failure.getErrorMessage()
    if failure.check(BackendError):
        crawl.backend_failed(failure.value, f"{engine}: {kept_pages(first, page_number - 1)}")
        query.stop(engine, StopReason.ERROR, message)
    elif failure.check(RequestRefused):
        logger.warning(
            "%s page %d not requested (%s); %s",
            engine,
            page_number,
            message,
            kept_pages(first, page_number - 1),
        )
        query.stop(engine, failure.value.stop_reason, message)
        # A breaker open on network failures refuses with `error`: the engine is unreachable,
        # and the query failed; any other refusal is politeness, to wait for in a batch.
        if failure.value.stop_reason != StopReason.ERROR:
            query.refused_engines.add(engine)
    else:
        logger.error(
            "%s page %d could not be fetched (%s); %s",
            engine,
            page_number,
            message,
            kept_pages(first, page_number - 1),
        )
        crawl.stats.inc_value(f"lyra/{engine}/outcome/network_error")
        query.stop(engine, StopReason.ERROR, message)
    settle_later(crawl, query)


def stop_with_pages_stored(query: RunningQuery, source: str) -> None:
    """End a source of a resumed query whose every page is stored already, before any request
    (the crawl that stored them was stopped before it could record why the source stopped)."""
    first = query.first_page
    last = query.pagination.last_page(first, query.paging[source].page_cap)
    query.stop(source, StopReason.MAX_PAGES, f"pages {first}..{last} already stored")


def kept_pages(first: int, last: int) -> str:
    """What a source that stops keeps: its pages `first`..`last` (none when last < first)."""
    if last < first:
        return "no page kept"
    return f"keeping page {first}" if last == first else f"keeping pages {first}..{last}"
