"""CrawlSessionExtension: the Scrapy extension that is a crawler's CrawlSession.

Built from the crawler's settings before the first request (EXTENSIONS in settings.py). When
the spider opens, it opens the session's backends and freezes what is alive then; while
requests wait outside Scrapy's concurrency or background work runs, it keeps the spider open;
when the spider closes, it stops the queries still open (their unfinished sources `cancelled`,
or `error` after a backend failure, their citation graphs' open lists with them), closes them,
puts the batch entries it took and had not opened back to pending, then closes the backends.
"""

from __future__ import annotations

import gc
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider

from lyra_crawl.config import load_config
from lyra_crawl.records import QueryStatus
from lyra_crawl.session import citations
from lyra_crawl.session.closing import close_query, put_back_entries
from lyra_crawl.session.crawl import CrawlSession


class CrawlSessionExtension(CrawlSession):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        session = cls(crawler, load_config(crawler.settings.get("LYRA_CONFIG_DIR")))
        crawler.signals.connect(session.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(session.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(session.spider_closed, signal=signals.spider_closed)
        return session

    async def spider_opened(self) -> None:
        await self.open_backends()
        # What is alive now (modules, settings, config, the crawl's components) lives as long
        # as the crawl: kept out of the collector's full passes, each of which scanned it all
        # and held up the reactor, and every engine's next request with it, 50-70 ms. Given
        # back to the collector when the spider closes (a process may crawl again). Frozen
        # without a full pass first: that pass cost as much as one it saves (a process that
        # crawls again, as the tests' do, paid it at every crawl), and what is garbage now is
        # only held until the crawl ends.
        gc.freeze()

    def spider_idle(self) -> None:
        if self.busy:
            raise DontCloseSpider

    def _closing_status(self, reason: str) -> QueryStatus:
        """The status of the queries still open when the crawl closes for `reason`.

        Any close other than finishing or a backend failure was asked for: `shutdown` (Ctrl-C,
        SIGTERM, Scrapyd's cancel, which sends SIGINT), a CloseSpider limit, `cancelled`.
        """
        if self.storage_failure is not None:
            return QueryStatus.INTERRUPTED
        return QueryStatus.FINISHED if reason == "finished" else QueryStatus.CANCELLED

    async def spider_closed(self, reason: str) -> None:
        self.closed = True
        await self.stop_background_work()
        status = self._closing_status(reason)
        failure = str(self.storage_failure) if self.storage_failure is not None else None
        for query in list(self.queries.values()):
            query.cancel_unfinished(failure)
            query.ledger.flush_all()
            if not self.store_failed:
                await citations.cancel(self, query)
            await close_query(self, query, status)
        if not self.store_failed:
            await put_back_entries(self)
        await self.close_backends()
        gc.unfreeze()
