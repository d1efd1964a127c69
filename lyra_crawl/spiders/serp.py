"""SerpSpider: one query, one SERP engine, pages requested one after another.

Arguments (`-a name=value`): query (required), engine, serp_page, serp_max_pages, strategy,
time_range, region, task_id, harvest_rate; Scrapyd's `_job` is accepted. Settings:
LYRA_CONFIG_DIR, LYRA_DB_PATH, LYRA_SIMULATOR_URL (see settings.py and the README); the
politeness middlewares have their own.

Without `-a engine=`, selection.py picks the engine (last-mile for tasks with a high harvest
rate), among engines whose breaker is not open and whose daily quota is not spent.

Page N+1 is requested only after page N is parsed, from the URL formula or, for engines that
hand a token from page to page, from page N's own next-page form. Each page is stored whole.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import FormRequest, Request, Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from lyra_crawl.arguments import CrawlArguments, parse_crawl_arguments, usable_engines
from lyra_crawl.breaker import refuses_now
from lyra_crawl.config import EngineSpec, LyraConfig, load_config
from lyra_crawl.engines.base import PageRequest, ParseResult
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.engines.request import build_page_request, ensure_engine_host
from lyra_crawl.items import SerpItem
from lyra_crawl.middlewares.base import RequestRefused
from lyra_crawl.middlewares.daily_quota import utc_date
from lyra_crawl.page_ledger import PageLedger
from lyra_crawl.query import normalize_query
from lyra_crawl.routing import route_to_simulator
from lyra_crawl.selection import SelectionDecision, choose_engine
from lyra_crawl.storage import PageRecord, QueryRecord, Storage, open_storage

logger = logging.getLogger(__name__)

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
        self.pages = PageLedger(storage.store_page)
        self.query_id: int | None = None
        self.engine_name: str | None = None
        self.stop_reasons: dict[str, str] = {}
        self.simulator_url: str | None = None

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
        return spider

    # -- start ---------------------------------------------------------------------------

    async def start(self) -> AsyncIterator[Any]:
        args = self.arguments
        decision = self._choose_engine()
        logger.info("engine choice: %s", decision.as_dict())
        engine = decision.engine
        if engine is None:
            logger.error(
                "no engine available (%s): pass -a engine=NAME or check `scrapy engines`",
                decision.reason,
            )
            return
        self.engine_name = engine
        spec = self.config.engine(engine)
        self.first_page = args.serp_page
        self.last_page = self._last_page(spec)
        self.query_id = self.storage.start_query(
            QueryRecord(
                query_text=args.query,
                normalized_query=normalize_query(args.query),
                engine=engine,
                serp_page=args.serp_page,
                serp_max_pages=args.serp_max_pages,
                strategy=args.strategy,
                time_range=args.time_range,
                region=args.region,
                task_id=args.task_id,
                job_id=args.job_id,
                selection=decision.as_dict(),
            )
        )
        logger.info(
            "query %d: %r on %s, pages %d..%d",
            self.query_id,
            args.query,
            engine,
            self.first_page,
            self.last_page,
        )
        if spec.next_page == "form" and args.serp_page > 1:
            logger.error("engine %s hands a token from page to page: start at serp_page=1", engine)
            self.stop_reasons[engine] = "error"
            return
        page = build_page_request(
            spec, args.query, args.serp_page, region=args.region, time_range=args.time_range
        )
        yield self._request(spec, page, args.serp_page)

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

    def _last_page(self, spec: EngineSpec) -> int:
        policy = self.config.policy(spec.name)
        if not policy.pagination_enabled:
            return self.arguments.serp_page
        if self.arguments.strategy == "exhaustive":
            return spec.max_pages
        return min(self.arguments.serp_page + self.arguments.serp_max_pages - 1, spec.max_pages)

    def _request(self, spec: EngineSpec, page: PageRequest, page_number: int) -> Request:
        url = route_to_simulator(page.url, spec.name, self.simulator_url)
        meta = {
            "lyra_engine": spec.name,
            "lyra_source": spec.name,
            "lyra_page": page_number,
            "lyra_query_id": self.query_id,
            "download_slot": spec.name,
            # Block pages arrive as 403/429/5xx; the parser must see them (redirects still
            # followed, so a 302 to a CAPTCHA page shows up as that page's URL).
            "handle_httpstatus_list": HANDLED_STATUSES,
        }
        if page.method == "POST":
            return FormRequest(
                url,
                formdata=list(page.formdata or ()),
                meta=meta,
                callback=self.parse_serp,
                errback=self.page_failed,
                dont_filter=True,
            )
        return Request(
            url, meta=meta, callback=self.parse_serp, errback=self.page_failed, dont_filter=True
        )

    # -- pages ---------------------------------------------------------------------------

    def parse_serp(self, response: Response) -> Any:
        spec = self.config.engine(response.meta["lyra_engine"])
        page_number = response.meta["lyra_page"]
        result = parse_page(
            spec, response.body, page_number, status=response.status, url=response.url
        )
        self._count(spec.name, result)
        self.pages.open_page(
            PageRecord(
                query_id=self.query_id,
                source=spec.name,
                page_number=page_number,
                outcome=result.outcome.value,
                results=len(result.results),
                url=response.url,
            ),
            expected=len(result.results),
        )
        for position, found in enumerate(result.results, start=1):
            yield SerpItem(
                query_id=self.query_id,
                source=spec.name,
                engine=spec.name,
                page_number=page_number,
                position=position,
                url=found.url,
                title=found.title,
                snippet=found.snippet,
                date=found.date,
                doi=found.doi,
                arxiv_id=found.arxiv_id,
                pmid=found.pmid,
            )
        next_request = self._next_page(spec, result, page_number)
        if next_request is not None:
            yield next_request

    def _next_page(self, spec: EngineSpec, result: ParseResult, page_number: int) -> Request | None:
        """The request for the following page, or None with the stop reason recorded."""
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
            return self._stop(spec.name, "blocked")
        if result.outcome.value == "error":
            logger.error("%s page %d failed: %s", spec.name, page_number, result.detail)
            return self._stop(spec.name, "error")
        if not result.results:
            return self._stop(spec.name, "empty_page")
        if page_number >= self.last_page:
            return self._stop(spec.name, "max_pages")
        following = page_number + 1
        if spec.next_page == "form":
            if result.next_request is None:
                logger.info("%s page %d has no next-page form: last page", spec.name, page_number)
                return self._stop(spec.name, "empty_page")
            page = result.next_request
        else:
            page = build_page_request(
                spec,
                self.arguments.query,
                following,
                region=self.arguments.region,
                time_range=self.arguments.time_range,
            )
        ensure_engine_host(spec, page.url, self.arguments.region)
        return self._request(spec, page, following)

    def _stop(self, source: str, reason: str) -> None:
        self.stop_reasons[source] = reason
        self.crawler.stats.inc_value(f"lyra/stop_reason/{reason}")
        return None

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
            self._stop(engine, failure.value.stop_reason)
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
        self._stop(engine, "error")

    # -- close ---------------------------------------------------------------------------

    def closed(self, reason: str) -> None:
        self.pages.flush_all()
        if self.query_id is not None:
            status = "finished" if reason == "finished" else "interrupted"
            self.storage.finish_query(self.query_id, status=status, stop_reasons=self.stop_reasons)
            row = self.storage.query(self.query_id)
            logger.info(
                "query %d %s: %d pages, %d items, stop %s",
                self.query_id,
                status,
                row["pages_fetched"],
                row["items"],
                self.stop_reasons,
            )
        self.storage.close()
