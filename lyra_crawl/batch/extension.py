"""BatchProgressExtension: a batch crawl's progress while it runs, from the store.

For a crawl of a stored batch (`-a batch=ID`, as `scrapy batch` and its Scrapyd job run it),
a LoopingCall on the reactor reads the batch's figures every tick through the async backend
(lyra_crawl.batch.progress.BatchMonitor: a handful of indexed aggregate queries, on a
connection and worker thread of its own, so they never wait on or hold up the crawl's page
writes) and shows them (lyra_crawl.batch.display): a live table when stderr is a terminal,
else an INFO log line every LYRA_PROGRESS_INTERVAL seconds, which lands in Scrapyd's job log.
The rate-limit waits come from the crawl's stats (`lyra/<engine>/rate/waits`). The final
figures are shown once the engine has stopped, every query closed.

Settings: LYRA_PROGRESS_INTERVAL (seconds between plain lines, default 30; 0 turns progress
off), LYRA_RATE_LIMIT_ENABLED (off: the ETA takes the observed pace, not engines.yaml's qps).
Crawls of one query (`-a query=`) and other spiders are left alone.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Self

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.task import LoopingCall

from lyra_crawl.backends import Backends, open_backends, urls_from_settings
from lyra_crawl.backends.records import BackendError
from lyra_crawl.batch.display import ProgressDisplay
from lyra_crawl.batch.progress import BatchMonitor, ProgressFigures
from lyra_crawl.config import load_config
from lyra_crawl.query.arguments import StoredBatch

logger = logging.getLogger(__name__)

WAITS_STAT = re.compile(r"lyra/(?P<engine>[^/]+)/rate/waits")


class BatchProgressExtension:
    def __init__(self, crawler: Crawler, interval_s: float) -> None:
        self.crawler = crawler
        self.interval_s = interval_s
        self._backends: Backends | None = None
        self._monitor: BatchMonitor | None = None
        self._display: ProgressDisplay | None = None
        self._ticks: LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = crawler.settings.getfloat("LYRA_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured("LYRA_PROGRESS_INTERVAL is 0: no batch progress")
        extension = cls(crawler, interval)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    async def spider_opened(self, spider: Spider) -> None:
        plan = getattr(spider, "plan", None)
        if not isinstance(plan, StoredBatch):
            return
        settings = self.crawler.settings
        try:
            self._backends = await open_backends(urls_from_settings(settings))
        except BackendError as exc:
            logger.warning("no batch progress: %s", exc)
            return
        self._monitor = BatchMonitor(
            self._backends.store,
            plan.batch_id,
            load_config(settings.get("LYRA_CONFIG_DIR")),
            rate_limited=settings.getbool("LYRA_RATE_LIMIT_ENABLED"),
        )
        self._display = ProgressDisplay(interval_s=self.interval_s, emit=_log_line)
        self._ticks = LoopingCall(lambda: deferred_from_coro(self._tick()))
        self._ticks.start(self._display.refresh_s, now=False)

    async def engine_stopped(self) -> None:
        if self._ticks is not None and self._ticks.running:
            self._ticks.stop()
        if self._display is not None:
            self._display.close(await self._figures())
        if self._backends is not None:
            await self._backends.close()
            self._backends = None

    async def _tick(self) -> None:
        if self._display is None or self._monitor is None:
            return
        if not self._display.due(self._monitor.read_s):
            return
        figures = await self._figures()
        if figures is not None and self._display is not None:
            self._display.show(figures)

    async def _figures(self) -> ProgressFigures | None:
        if self._monitor is None:
            return None
        try:
            return await self._monitor.figures(self._waits())
        except BackendError as exc:
            logger.debug("batch progress not read: %s", exc)
            return None

    def _waits(self) -> dict[str, int]:
        stats: dict[str, Any] = self.crawler.stats.get_stats()
        waits = {}
        for key, value in stats.items():
            found = WAITS_STAT.fullmatch(key)
            if found:
                waits[found["engine"]] = int(value)
        return waits


def _log_line(line: str) -> None:
    logger.info("%s", line)
