"""What the politeness downloader middlewares share: refusals, waits, config and storage.

Each middleware reads engines.yaml (LYRA_CONFIG_DIR) and opens the database (LYRA_DB_PATH)
once, in `from_crawler`, and raises NotConfigured when its `LYRA_*_ENABLED` setting is off.
Requests without `lyra_engine` in their meta pass through untouched.

Waiting requests leave the shared concurrency. Scrapy counts every request between the engine
and the download handler against CONCURRENT_REQUESTS, waits in middlewares included, so a few
requests sleeping until a slow engine's next slot would stall every other engine of the crawl.
While a middleware waits, the request is therefore taken out of the downloader's active set, and
the spider is kept open (DontCloseSpider) until no request is waiting.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import ClassVar, Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, IgnoreRequest, NotConfigured

from lyra_crawl.config import LyraConfig, load_config
from lyra_crawl.storage import Storage, open_storage

logger = logging.getLogger(__name__)


class RequestRefused(IgnoreRequest):
    """A politeness rule refused the request; `stop_reason` ends that source's pagination."""

    def __init__(self, engine: str, stop_reason: str, message: str) -> None:
        super().__init__(message)
        self.engine = engine
        self.stop_reason = stop_reason


class EngineMiddleware:
    """Base of the middlewares that act on requests carrying `lyra_engine`."""

    enabled_setting: ClassVar[str]

    def __init__(self, crawler: Crawler, config: LyraConfig, storage: Storage) -> None:
        self.crawler = crawler
        self.config = config
        self.storage = storage
        self.stats = crawler.stats
        self.download_timeout = crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        self._waiting = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not settings.getbool(cls.enabled_setting):
            raise NotConfigured(f"{cls.enabled_setting} is off")
        middleware = cls(
            crawler,
            load_config(settings.get("LYRA_CONFIG_DIR")),
            open_storage(settings["LYRA_DB_PATH"]),
        )
        crawler.signals.connect(middleware.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def engine_of(self, request: Request) -> str | None:
        engine = request.meta.get("lyra_engine")
        return engine if engine in self.config.policies else None

    def count(self, engine: str, event: str, value: float = 1) -> None:
        self.stats.inc_value(f"lyra/{engine}/{event}", value)

    def refuse(self, engine: str, stop_reason: str, message: str) -> RequestRefused:
        self.count(engine, f"refused/{stop_reason}")
        logger.warning("request to %s refused: %s", engine, message)
        return RequestRefused(engine, stop_reason, message)

    @asynccontextmanager
    async def outside_concurrency(self, request: Request) -> AsyncIterator[None]:
        """Run the block's wait without the request counting against CONCURRENT_REQUESTS."""
        downloader = self.crawler.engine.downloader
        downloader.active.discard(request)
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1
            downloader.active.add(request)

    def spider_idle(self) -> None:
        if self._waiting:
            raise DontCloseSpider

    def spider_closed(self) -> None:
        self.storage.close()
