"""BatchProgressExtension: a batch crawl's progress while it runs, from the store.

For a crawl of a stored batch (`-a batch=ID`, as `scrapy batch` and its Scrapyd job run it),
a LoopingCall on the reactor records the crawl's rate-limit waits per engine (its
`lyra/<engine>/rate/waits` stats) in the store every tick (`BatchStore.record_rate_waits`,
when they changed), so that progress read from the store in any process shows them, then
reads the batch's figures through the crawl's own async backend (CrawlSession.store;
lyra_crawl.batch.progress.BatchMonitor: a handful of indexed aggregate queries on the
backend's worker thread, their share of its time bounded by
lyra_crawl.batch.display.READ_SHARE) and shows them (lyra_crawl.batch.display): a live table
when stderr is a terminal, else an INFO log line every LYRA_PROGRESS_INTERVAL seconds, which
lands in Scrapyd's job log. Ticks start once the engine has started (the session's backends
are open by then) and stop when the spider closes; the last waits are recorded and the final
figures read once the engine has stopped, every query closed, through a backend opened for
that (the session's is closed by then).

Settings: LYRA_PROGRESS_INTERVAL (seconds between plain lines, default 30; 0 shows no progress,
as the crawls of `scrapy batch --processes` and --scrapyd do, whose command shows it from the
store: their waits are still recorded), LYRA_RATE_LIMIT_ENABLED (off: the ETA takes the
observed pace, not engines.yaml's qps). Crawls of one query (`-a query=`) and other spiders are
left alone.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Self

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.task import LoopingCall

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.backends.protocols import BatchStore
from lyra_crawl.batch.display import ProgressDisplay
from lyra_crawl.batch.progress import BatchMonitor, ProgressFigures
from lyra_crawl.config import load_config
from lyra_crawl.query.arguments import StoredBatch
from lyra_crawl.records import BackendError
from lyra_crawl.session.crawl import CrawlSession

logger = logging.getLogger(__name__)

WAITS_STAT = re.compile(r"lyra/(?P<engine>[^/]+)/rate/waits")
# Seconds between two records of a crawl's waits when it shows no progress of its own.
WAITS_RECORD_S = 2.0


class BatchProgressExtension:
    def __init__(self, crawler: Crawler, interval_s: float) -> None:
        self.crawler = crawler
        self.interval_s = interval_s
        self._batch_id: int | None = None
        self._recorded: dict[str, int] = {}
        self._monitor: BatchMonitor | None = None
        self._display: ProgressDisplay | None = None
        self._ticks: LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls(crawler, crawler.settings.getfloat("LYRA_PROGRESS_INTERVAL"))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        plan = getattr(spider, "plan", None)
        if not isinstance(plan, StoredBatch):
            return
        self._batch_id = plan.batch_id
        if self.interval_s <= 0:
            return
        settings = self.crawler.settings
        self._monitor = BatchMonitor(
            plan.batch_id,
            load_config(settings.get("LYRA_CONFIG_DIR")),
            rate_limited=settings.getbool("LYRA_RATE_LIMIT_ENABLED"),
        )
        self._display = ProgressDisplay(interval_s=self.interval_s, emit=_log_line)

    def engine_started(self) -> None:
        if self._batch_id is not None:
            self._ticks = LoopingCall(lambda: deferred_from_coro(self._tick()))
            refresh_s = WAITS_RECORD_S if self._display is None else self._display.refresh_s
            self._ticks.start(refresh_s, now=False)

    def spider_closed(self) -> None:
        if self._ticks is not None and self._ticks.running:
            self._ticks.stop()

    async def engine_stopped(self) -> None:
        monitor = self._monitor
        if self._batch_id is None or (monitor is None and self._waits() == self._recorded):
            return  # nothing to show, nor to record: no backend opened for it

        async def finish(backends: Backends) -> ProgressFigures | None:
            await self._record_waits(backends.store)
            return None if monitor is None else await monitor.figures(backends.store)

        try:
            figures = await with_backends(self.crawler.settings, finish)
        except BackendError as exc:
            logger.warning("batch progress: the final figures cannot be stored or read (%s)", exc)
            figures = None
        if self._display is not None:
            self._display.close(figures)

    async def _tick(self) -> None:
        store = CrawlSession.of(self.crawler).store
        display, monitor = self._display, self._monitor
        try:
            await self._record_waits(store)
            if display is None or monitor is None or not display.due(monitor.read_s):
                return
            figures = await monitor.figures(store)
        except (BackendError, RuntimeError) as exc:
            # The crawl is closing its backend under this tick (RuntimeError: its worker is
            # shut down); the final figures come after the engine stopped.
            logger.debug("batch progress not stored or read: %s", exc)
            return
        display.show(figures)

    async def _record_waits(self, store: BatchStore) -> None:
        """The crawl's rate-limit waits per engine in the store, if they changed."""
        waits = self._waits()
        if self._batch_id is None or waits == self._recorded:
            return
        owner = CrawlSession.of(self.crawler).owner
        await store.record_rate_waits(self._batch_id, owner, waits)
        self._recorded = waits

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
