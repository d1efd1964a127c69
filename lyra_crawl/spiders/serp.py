"""SerpSpider: one query, one SERP engine, pages requested one after another.

Arguments (`-a name=value`): query (required), engine, serp_page, serp_max_pages, strategy,
time_range, region, task_id, harvest_rate; Scrapyd's `_job` is accepted. Settings:
LYRA_CONFIG_DIR, LYRA_DB_PATH, LYRA_SIMULATOR_URL, LYRA_BROWSER_ENABLED, LYRA_CHROMIUM_PATH (see
settings.py and the README); the politeness middlewares have their own.

Without `-a engine=`, selection.py picks the engine (last-mile for tasks with a high harvest
rate), among engines whose breaker is not open and whose daily quota is not spent.

Page N+1 is requested only after page N is parsed, from the URL formula or, for engines that
hand a token from page to page, from page N's own next-page form. Engines with a token page
(Startpage) have it fetched before page 1; engines whose page needs a follow-up request (PubMed's
esummary) have it answered before the page is opened. A page that repeats the previous page of
its source is a soft block. Each page is stored whole. Pages of `render: browser` engines are
rendered in Chromium (lyra_crawl.browser) and parsed like any other.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import FormRequest, Request, Response
from scrapy.settings import BaseSettings
from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure

from lyra_crawl.browser.render import browser_meta, install_browser, render_schemes
from lyra_crawl.config import EngineSpec, LyraConfig, load_config
from lyra_crawl.engines.base import Outcome, PageRequest, ParseResult, SerpResult
from lyra_crawl.engines.blocks import repeated_page
from lyra_crawl.engines.parsing import parse_fetched, parse_page
from lyra_crawl.engines.request import (
    QueryError,
    build_page_request,
    ensure_engine_host,
    redact_secrets,
    secrets_from_settings,
    with_query,
)
from lyra_crawl.engines.routing import engine_url, route_to_simulator
from lyra_crawl.items import PaperItem, SerpItem
from lyra_crawl.middlewares.base import RequestRefused
from lyra_crawl.middlewares.block_detection import PARSED_META, TOKEN_PAGE_META, record_block
from lyra_crawl.middlewares.daily_quota import utc_date
from lyra_crawl.paging.ledger import PageLedger
from lyra_crawl.paging.relevance import RelevanceConfig
from lyra_crawl.paging.stop_rules import PaginationConfig, PaginationStrategy, Strategy
from lyra_crawl.politeness.breaker import refuses_now
from lyra_crawl.politeness.selection import SelectionDecision, choose_engine
from lyra_crawl.query.arguments import (
    SERP_SOURCE,
    CrawlArguments,
    crawl_sources,
    parse_crawl_arguments,
    usable_engines,
)
from lyra_crawl.query.cache_key import cache_key
from lyra_crawl.query.text import normalize_query
from lyra_crawl.spiders.replay import cached_pages
from lyra_crawl.storage import PageRecord, QueryRecord, Storage, StorageError, open_storage

logger = logging.getLogger(__name__)

# The close reason of a crawl whose storage refused a write; `scrapy crawl` exits 1 on it.
STORAGE_ERROR = "storage_error"
HANDLED_STATUSES = [400, 401, 403, 404, 408, 410, 429, 500, 502, 503, 504, 522, 524]


class SerpSpider(scrapy.Spider):
    name = "serp"

    def __init__(
        self, *, config: LyraConfig, arguments: CrawlArguments, storage: Storage, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.config = config
        self.arguments = arguments
        self.storage = storage
        self.pages = PageLedger(self._store_page)
        self.storage_failure: StorageError | None = None
        # Filled when resuming an interrupted crawl: where each source goes on, and what its
        # stored pages already hold.
        self.start_pages: dict[str, int] = {}
        # DedupePipeline's keys of the stored items: normalized URL, and doi:DOI.
        self.stored_keys: set[str] = set()
        self.resumed_items: list[sqlite3.Row] = []
        self.stored_ranks: dict[str, int] = {}
        self.query_id: int | None = None
        self.engine_name: str | None = None
        self.stop_reasons: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.secrets: dict[str, str] = {}
        self.last_pages: dict[str, int] = {}
        self.cached_from: int | None = None
        self.simulator_url: str | None = None
        self.browser_enabled = False
        self.breaker_enabled = False
        self.cache_hit = False
        self.relevance = RelevanceConfig(threshold=config.pagination.relevance_threshold)
        # URLs of the last page parsed per source, to catch an engine repeating a page.
        self.previous_urls: dict[str, tuple[str, ...]] = {}

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """One download slot per engine: concurrency 1, no delay or jitter.

        Pacing is RateLimitMiddleware's, shared through the database; a slot delay would pace
        this process only, on top of it.
        """
        super().update_settings(settings)
        config = load_config(settings.get("LYRA_CONFIG_DIR"))
        slots = dict(settings.getdict("DOWNLOAD_SLOTS"))
        for name in config.policies:
            slots.setdefault(name, {"concurrency": 1, "delay": 0.0, "jitter": 0})
        settings.set("DOWNLOAD_SLOTS", slots, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SerpSpider:
        settings = crawler.settings
        config = load_config(settings.get("LYRA_CONFIG_DIR"))
        arguments = parse_crawl_arguments(kwargs, config)
        storage = open_storage(settings.get("LYRA_DB_PATH"))
        spider = cls(config=config, arguments=arguments, storage=storage)
        spider._set_crawler(crawler)
        spider.simulator_url = settings.get("LYRA_SIMULATOR_URL") or None
        spider.secrets = secrets_from_settings(settings)
        spider.browser_enabled = settings.getbool("LYRA_BROWSER_ENABLED")
        spider.breaker_enabled = settings.getbool("LYRA_BREAKER_ENABLED")
        if spider.browser_enabled:
            # Settings are still open here; crawls that render nothing never load Playwright.
            schemes = render_schemes(config, arguments.engine, spider.simulator_url)
            if schemes:
                install_browser(settings, schemes)
        return spider

    # -- start ---------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        args = self.arguments
        normalized = normalize_query(args.query)
        resumed = self._interrupted_crawl(normalized) if args.resume else None
        engine = None
        selection: dict[str, Any] = {"reason": "no SERP engine in sources"}
        if SERP_SOURCE in args.sources:
            decision = self._choose_engine() if resumed is None else self._resumed_engine(resumed)
            logger.info("engine choice: %s", decision.as_dict())
            engine, selection = decision.engine, decision.as_dict()
            if engine is None:
                logger.error(
                    "no engine available (%s): pass -a engine=NAME or check `scrapy engines`",
                    decision.reason,
                )
                return
        self.engine_name = engine
        sources = crawl_sources(engine, args.sources)
        self.pagination = PaginationStrategy(
            PaginationConfig(
                serp_max_pages=args.serp_max_pages,
                min_novelty_rate=self.config.pagination.min_novelty_rate,
                min_harvest_rate=self.config.pagination.min_harvest_rate,
                strategy=Strategy(args.strategy),
            )
        )
        self.first_page = args.serp_page
        self.last_pages = {
            source: self.pagination.last_page(args.serp_page, self.page_cap(source))
            for source in sources
        }
        self.cache_key = cache_key(normalized, sources, args.time_range, args.serp_max_pages)
        if resumed is None:
            self.query_id = self.storage.start_query(
                self._query_record(normalized, sources[0], selection)
            )
        elif not self._resume(resumed["id"], sources):
            return
        cached = None if resumed else self._cached_query()
        if cached is not None:
            for output in self._replay(cached):
                yield output
            return
        logger.info(
            "query %d: %r on %s, pages %d..%s",
            self.query_id,
            args.query,
            ", ".join(sources),
            self.first_page,
            self.last_pages,
        )
        for source in sources:
            for request in self._first_requests(self.config.engine(source)):
                yield request

    def _first_requests(self, spec: EngineSpec) -> Iterator[Request]:
        """Page `serp_page` of one source, or its token page first; none when it cannot start."""
        args = self.arguments
        if spec.next_page == "form" and args.serp_page > 1:
            logger.error(
                "engine %s hands a token from page to page: start at serp_page=1", spec.name
            )
            self.record_stop(spec.name, "error", "serp_page > 1 on a token engine")
            return
        if spec.token_page:
            token_page = PageRequest(url=spec.token_page)
            yield self._request(spec, token_page, args.serp_page, token_page=True)
            return
        start = self.start_pages.get(spec.name, args.serp_page)
        if start > self.last_pages[spec.name]:
            return  # a resumed source that had stored all its pages
        try:
            page = self._page_request(spec, start)
        except QueryError as exc:
            logger.error("%s", exc)
            self.record_stop(spec.name, "max_pages", str(exc))
            return
        yield self._request(spec, page, start)

    def _query_record(
        self, normalized: str, engine: str, selection: dict[str, Any] | None = None
    ) -> QueryRecord:
        args = self.arguments
        return QueryRecord(
            query_text=args.query,
            normalized_query=normalized,
            engine=engine,
            sources=",".join(args.sources),
            serp_page=args.serp_page,
            serp_max_pages=args.serp_max_pages,
            strategy=args.strategy,
            time_range=args.time_range,
            region=args.region,
            task_id=args.task_id,
            job_id=args.job_id,
            selection=selection,
        )

    # -- resume (-a resume=true) ---------------------------------------------------------
    # The interrupted queries row is reopened, not copied: each source's pages 1..k stay where
    # they are and it goes on at page k+1, so every page is stored once under one query id.

    def _interrupted_crawl(self, normalized: str) -> sqlite3.Row | None:
        """The latest interrupted crawl of this query with these arguments, if any."""
        engine = self.arguments.engine
        row = self.storage.interrupted_query(
            self._query_record(normalized, engine or ""), any_engine=engine is None
        )
        if row is None:
            logger.info("resume=true: no interrupted crawl of %r, starting afresh", normalized)
        return row

    def _resumed_engine(self, resumed: sqlite3.Row) -> SelectionDecision:
        """The interrupted crawl's engine: pagination never switches engine."""
        return SelectionDecision(
            resumed["engine"], False, "resumed", None, self.config.lastmile.threshold
        )

    def _resume(self, query_id: int, sources: list[str]) -> bool:
        """Reopen `query_id`, each source after its last stored page; False when it cannot be."""
        stored = {(row["source"], row["page_number"]) for row in self.storage.pages(query_id)}
        for source in sources:
            following = self.first_page
            while (source, following) in stored:
                following += 1
            if self.config.engine(source).next_page == "form" and following > self.first_page:
                # Page N+1 needs the token of page N's response, which was never stored.
                logger.error(
                    "query %d cannot resume at page %d: engine %s hands a token from page to "
                    "page; run again without resume=true to crawl it from page %d",
                    query_id,
                    following,
                    source,
                    self.first_page,
                )
                return False
            self.start_pages[source] = following
        self.storage.reopen_query(query_id)
        self.query_id = query_id
        self.resumed_items = self.storage.items(query_id)
        for item in self.resumed_items:
            self.stored_keys.add(item["normalized_url"])
            if item["doi"]:
                self.stored_keys.add(f"doi:{item['doi']}")
            source = item["source"]
            self.stored_ranks[source] = max(self.stored_ranks.get(source, 0), item["rank"])
        logger.info("query %d resumed at pages %s", query_id, self.start_pages)
        return True

    # -- storage failure -----------------------------------------------------------------

    def _store_page(self, page: PageRecord, items: list[dict[str, Any]]) -> None:
        """Store one whole page; on a write failure say so once and close the crawl."""
        if self.storage_failure is not None:
            return  # closing: nothing more can be written
        try:
            self.storage.store_page(page, items)
        except StorageError as exc:
            self.storage_failure = exc
            logger.error(
                "%s; stopping the crawl: pages before %s page %d are stored complete",
                exc,
                page.source,
                page.page_number,
            )
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=STORAGE_ERROR))

    def _page_request(
        self, spec: EngineSpec, page_number: int, tokens: dict[str, str] | None = None
    ) -> PageRequest:
        args = self.arguments
        return build_page_request(
            spec,
            args.query,
            page_number,
            region=args.region,
            time_range=args.time_range,
            tokens=tokens,
            secrets=self.secrets,
        )

    def _choose_engine(self) -> SelectionDecision:
        args = self.arguments
        harvest_rate = args.harvest_rate
        if harvest_rate is None and args.task_id is not None:
            harvest_rate = self.storage.task_harvest_rate(args.task_id)
        if args.engine is not None:
            return SelectionDecision(
                args.engine, False, "explicit", harvest_rate, self.config.lastmile.threshold
            )
        usable = usable_engines(self.config)
        return choose_engine(
            self.config,
            usable=usable,
            available=[name for name in usable if self._available(name)],
            harvest_rate=harvest_rate,
        )

    def _available(self, engine: str) -> bool:
        """Not refused right now by its breaker or its daily quota."""
        if refuses_now(self.storage.engine_health(engine), time.time()):
            return False
        limit = self.config.policy(engine).daily_limit
        return limit is None or self.storage.usage(engine, utc_date()) < limit

    def page_cap(self, source: str) -> int:
        """The highest page this source may reach: its max_pages, or serp_page when paging is
        switched off for it in engines.yaml."""
        if not self.config.policy(source).pagination_enabled:
            return self.arguments.serp_page
        return self.config.engine(source).max_pages

    # -- cache ---------------------------------------------------------------------------

    def _cached_query(self) -> int | None:
        if self.arguments.cache != "use":
            return None
        return self.storage.fresh_cache_entry(self.cache_key, datetime.now(UTC))

    def _replay(self, cached_query_id: int) -> Iterator[SerpItem]:
        """Re-emit the stored results of `cached_query_id` as this query's; no request."""
        logger.info(
            "query %d: answered from cache (query %d), no request sent",
            self.query_id,
            cached_query_id,
        )
        self.cache_hit = True
        self.cached_from = cached_query_id
        self.storage.mark_cache_hit(self.query_id, cached_query_id)
        cached = self.storage.query(cached_query_id)
        self.stop_reasons.update(json.loads(cached["stop_reason"] or "{}"))
        self.crawler.stats.inc_value("lyra/cache/hit")
        for page, items in cached_pages(self.storage, cached_query_id, self.query_id):
            self.pages.open_page(page, expected=len(items))
            yield from items

    def _request(
        self,
        spec: EngineSpec,
        page: PageRequest,
        page_number: int,
        *,
        token_page: bool = False,
    ) -> Request:
        url = route_to_simulator(page.url, spec.name, self.simulator_url)
        callback = self.parse_token_page if token_page else self.parse_serp
        meta = {
            "lyra_engine": spec.name,
            "lyra_engine_url": page.url,
            TOKEN_PAGE_META: token_page,
            "lyra_source": spec.name,
            "lyra_page": page_number,
            "lyra_query_id": self.query_id,
            "download_slot": spec.name,
            # Block pages arrive as 403/429/5xx; the parser must see them (redirects still
            # followed, so a 302 to a CAPTCHA page shows up as that page's URL).
            "handle_httpstatus_list": HANDLED_STATUSES,
        }
        if spec.render == "browser" and self.browser_enabled:
            meta.update(browser_meta(spec))
        if page.method == "POST":
            return FormRequest(
                url,
                formdata=list(page.formdata or ()),
                meta=meta,
                headers=dict(page.headers),
                callback=callback,
                errback=self.page_failed,
                dont_filter=True,
            )
        return Request(
            url,
            meta=meta,
            headers=dict(page.headers),
            callback=callback,
            errback=self.page_failed,
            dont_filter=True,
        )

    # -- pages ---------------------------------------------------------------------------

    def _engine_url(self, response: Response) -> str:
        """The response's URL on the engine's own host, for parsers that read it."""
        meta = response.meta
        return engine_url(
            response.url, meta["lyra_engine_url"], meta["lyra_engine"], self.simulator_url
        )

    def parse_token_page(self, response: Response) -> Any:
        """Read the token page's fields and request page 1 with them."""
        spec = self.config.engine(response.meta["lyra_engine"])
        result = response.meta.pop(PARSED_META, None) or parse_fetched(
            spec,
            response.body,
            self.arguments.serp_page,
            status=response.status,
            url=self._engine_url(response),
            token_page=True,
        )
        self.crawler.stats.inc_value(f"lyra/{spec.name}/token_page/{result.outcome.value}")
        if result.outcome is not Outcome.OK:
            logger.warning("%s token page %s: %s", spec.name, result.outcome.value, result.detail)
            self.record_stop(spec.name, "blocked" if result.blocked else "error", result.detail)
            return
        page = self._page_request(spec, self.arguments.serp_page, dict(result.tokens))
        yield self._request(spec, page, self.arguments.serp_page)

    def parse_serp(self, response: Response) -> list[SerpItem | Request]:
        """One page's items, then the proposed next-page request.

        A list, not a generator: Scrapy inspects the source of every generator callback for a
        `return value` on each call, which costs more than the whole page's parsing.
        """
        spec = self.config.engine(response.meta["lyra_engine"])
        page_number = response.meta["lyra_page"]
        # Judged once: by BlockDetectionMiddleware when it runs, else here.
        result = response.meta.pop(PARSED_META, None) or parse_page(
            spec, response.body, page_number, status=response.status, url=self._engine_url(response)
        )
        if result.follow_up is not None:
            # The page is complete only with the follow-up's answer, parsed by this same method.
            return [self._request(spec, result.follow_up, page_number)]
        repeated = repeated_page(self.previous_urls.get(spec.name), result)
        if repeated is not result:
            self._report_repeat(spec, response, repeated)
            result = repeated
        self.previous_urls[spec.name] = tuple(found.url for found in result.results)
        self._count(spec.name, result)
        response.meta["lyra_outcome"] = result.outcome.value
        self.pages.open_page(
            PageRecord(
                query_id=self.query_id,
                source=spec.name,
                page_number=page_number,
                outcome=result.outcome.value,
                results=len(result.results),
                url=redact_secrets(spec, self._engine_url(response)),
            ),
            expected=len(result.results),
        )
        outputs: list[SerpItem | Request] = [
            self._item(spec, page_number, position, found)
            for position, found in enumerate(result.results, start=1)
        ]
        next_request = self._next_page(spec, result, page_number)
        if next_request is not None:
            outputs.append(next_request)
        return outputs

    def _report_repeat(self, spec: EngineSpec, response: Response, result: ParseResult) -> None:
        """A repeated page is a block only this spider sees: report it like the others."""
        if self.breaker_enabled:
            record_block(
                self.storage,
                self.config,
                self.crawler.stats,
                spec.name,
                result,
                url=self._engine_url(response),
                query_id=self.query_id,
            )

    def _item(
        self, spec: EngineSpec, page_number: int, position: int, found: SerpResult
    ) -> SerpItem:
        """A SerpItem, or a PaperItem with the record's metadata for a scholarly source."""
        fields = {
            "query_id": self.query_id,
            "source": spec.name,
            "engine": spec.name,
            "page_number": page_number,
            "position": position,
            "url": found.url,
            "title": found.title,
            "snippet": found.snippet,
            "date": found.date,
            "doi": found.doi,
            "arxiv_id": found.arxiv_id,
            "pmid": found.pmid,
        }
        if not spec.scholarly:
            return SerpItem(**fields)
        return PaperItem(
            **fields,
            authors=found.authors,
            year=found.year,
            venue=found.venue,
            abstract=found.abstract,
            source_id=found.source_id,
        )

    def _next_page(self, spec: EngineSpec, result: ParseResult, page_number: int) -> Request | None:
        """The request for the following page, if the engine can give one.

        Whether it is worth sending is the pagination middleware's call; it drops the request
        and records the stop reason (blocked, empty_page, max_pages, novelty, harvest, …).
        """
        if result.blocked:
            logger.warning(
                "%s blocked page %d (%s: %s); keeping pages %d..%d",
                spec.name,
                page_number,
                result.outcome.value,
                result.detail,
                self.first_page,
                page_number - 1,
            )
            return None
        if result.outcome is Outcome.ERROR:
            logger.error("%s page %d failed: %s", spec.name, page_number, result.detail)
            self.record_stop(spec.name, "error", f"page {page_number}: {result.detail}")
            return None
        if not result.results:
            return None
        if page_number >= self.last_pages[spec.name]:
            if page_number >= spec.max_pages:
                logger.info(
                    "%s: page %d not requested: the engine serves at most %d pages",
                    spec.name,
                    page_number + 1,
                    spec.max_pages,
                )
            return None
        following = page_number + 1
        if spec.next_page == "form":
            if result.next_request is None:
                detail = f"page {page_number} has no next-page form"
                self.record_stop(spec.name, "empty_page", detail)
                return None
            page = with_query(spec, result.next_request, self.arguments.query)
        else:
            page = self._page_request(spec, following)
        ensure_engine_host(spec, page.url, self.arguments.region)
        return self._request(spec, page, following)

    def record_stop(self, source: str, reason: str, detail: str) -> None:
        """Why `source` stops paging; the last word wins (the middleware speaks last)."""
        self.stop_reasons[source] = reason
        if reason == "error":
            self.errors.setdefault(source, detail)  # the first word says what failed
        logger.info("%s stops: %s (%s)", source, reason, detail)

    def _count(self, engine: str, result: ParseResult) -> None:
        stats = self.crawler.stats
        stats.inc_value(f"lyra/{engine}/pages")
        stats.inc_value(f"lyra/{engine}/outcome/{result.outcome.value}")
        stats.inc_value(f"lyra/{engine}/results", len(result.results))
        for reason, count in result.dropped.items():
            stats.inc_value(f"lyra/dropped/{reason}", count)

    def page_failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        engine = request.meta["lyra_engine"]
        page_number = request.meta["lyra_page"]
        if failure.check(RequestRefused):
            logger.warning(
                "%s page %d not requested (%s); keeping pages %d..%d",
                engine,
                page_number,
                failure.getErrorMessage(),
                self.first_page,
                page_number - 1,
            )
            self.record_stop(engine, failure.value.stop_reason, failure.getErrorMessage())
            return
        logger.error(
            "%s page %d could not be fetched (%s); keeping pages %d..%d",
            engine,
            page_number,
            failure.getErrorMessage(),
            self.first_page,
            page_number - 1,
        )
        self.crawler.stats.inc_value(f"lyra/{engine}/outcome/network_error")
        self.record_stop(engine, "error", failure.getErrorMessage())

    # -- close ---------------------------------------------------------------------------

    def closed(self, reason: str) -> None:
        self.pages.flush_all()
        if self.storage_failure is not None:
            # Nothing can be written: the row stays `running` until the next open of the
            # database finds this process gone and marks it interrupted.
            self.storage.close()
            return
        for stop_reason in self.stop_reasons.values():
            self.crawler.stats.inc_value(f"lyra/stop_reason/{stop_reason}")
        if self.query_id is not None:
            status = "finished" if reason == "finished" else "interrupted"
            self.storage.finish_query(
                self.query_id,
                status=status,
                stop_reasons=self.stop_reasons,
                errors=self.errors,
                relevance_threshold=self.relevance.threshold,
            )
            row = self.storage.query(self.query_id)
            cacheable = status == "finished" and row["items"] and not self.cache_hit
            if cacheable and self.arguments.cache != "off":
                now = datetime.now(UTC)
                expires_at = now + timedelta(hours=self.config.cache_ttl_hours)
                self.storage.store_cache_entry(
                    self.cache_key, self.query_id, created_at=now, expires_at=expires_at
                )
            logger.info(
                "query %d %s: %d pages, %d items, stop %s",
                self.query_id,
                status,
                row["pages_fetched"],
                row["items"],
                self.stop_reasons,
            )
        self.storage.close()
