"""CrawlSession: one per crawler, the Scrapy extension every lyra component shares state through.

Built from the crawler's settings before the first request: the config (LYRA_CONFIG_DIR), the
backends (LYRA_DB_URL / LYRA_DB_PATH, LYRA_COORDINATION_URL; opened when the spider opens,
closed when it closes), the simulator URL, the API secrets, the folder pages are saved in
(LYRA_DATA_DIR), and the registry of the crawl's QuerySessions by query id. The spider,
middlewares and pipelines get it in `from_crawler` (`crawler.get_extension(CrawlSession)`) and
find a request's or item's query through it.

It also keeps the crawl open while lyra has work Scrapy cannot see: requests waiting for their
engine outside the shared concurrency, and queries being closed.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import socket
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from typing import Any, Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.task import LoopingCall

from lyra_crawl.backends import Backends, open_backends, urls_from_settings
from lyra_crawl.backends.protocols import Coordinator, ResultStore
from lyra_crawl.backends.records import BackendError, QueryStatus
from lyra_crawl.config import EngineSpec, LyraConfig, load_config
from lyra_crawl.engines.base import PageRequest
from lyra_crawl.engines.request import build_page_request, secrets_from_settings
from lyra_crawl.politeness.refusals import BREAKER, HOURS, QUOTA
from lyra_crawl.session.citations import CitationFetcher
from lyra_crawl.session.closing import close_query
from lyra_crawl.session.query import CompletedPage, QuerySession
from lyra_crawl.session.saved_pages import data_dir

logger = logging.getLogger(__name__)

# The close reason of a crawl whose store refused a write; `scrapy crawl` exits 1 on it.
STORAGE_ERROR = "storage_error"


class CrawlSession:
    def __init__(self, crawler: Crawler, config: LyraConfig) -> None:
        settings = crawler.settings
        self.crawler = crawler
        self.config = config
        self.stats = crawler.stats
        self.simulator_url: str | None = settings.get("LYRA_SIMULATOR_URL") or None
        self.secrets = secrets_from_settings(settings)
        self.download_timeout = settings.getfloat("DOWNLOAD_TIMEOUT")
        # The rules by which this crawl's middlewares refuse requests (politeness.refusals): a
        # batch waits only for those.
        enforced: set[str] = set()
        if settings.getbool("LYRA_BREAKER_ENABLED"):
            enforced.add(BREAKER)
        if settings.getbool("LYRA_QUOTA_ENABLED"):  # the quota middleware keeps the hours too
            enforced.update((QUOTA, HOURS))
        self.enforced_refusals = frozenset(enforced)
        # Who holds a breaker's half-open trial or a batch entry's lease.
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._backend_urls = urls_from_settings(settings)
        # Where pages are kept for `scrapy parse-serp` (lyra_crawl.session.saved_pages).
        self.data_dir = data_dir(settings)
        self._backends: Backends | None = None
        self.queries: dict[int, QuerySession] = {}
        # The first backend failure, which closes the crawl; and whether the store itself
        # failed (then nothing more is written) or only the Coordinator (then what was fetched
        # is still stored and the queries closed).
        self.storage_failure: BackendError | None = None
        self._store_failed = False
        # Set once the spider closes: its backends close, and nothing more is opened.
        self.closed = False
        self._room = asyncio.Condition()
        self._waiting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._warned: set[str] = set()
        self._lease_renewal: LoopingCall | None = None
        # Pages are parsed here, off the reactor (lyra_crawl.session.judging).
        self.parser_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lyra-parse")
        self.citations = CitationFetcher(self)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        session = cls(crawler, load_config(crawler.settings.get("LYRA_CONFIG_DIR")))
        crawler.signals.connect(session.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(session.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(session.spider_closed, signal=signals.spider_closed)
        return session

    @staticmethod
    def of(crawler: Crawler) -> CrawlSession:
        """The crawler's session (components call this in from_crawler)."""
        session = crawler.get_extension(CrawlSession)
        if session is None:
            raise RuntimeError(
                "CrawlSession is not enabled: keep lyra_crawl.session.CrawlSession in EXTENSIONS"
            )
        return session

    # -- backends ----------------------------------------------------------------------------

    @property
    def store(self) -> ResultStore:
        assert self._backends is not None, "the backends open with the spider"
        return self._backends.store

    @property
    def coordinator(self) -> Coordinator:
        assert self._backends is not None, "the backends open with the spider"
        return self._backends.coordinator

    async def spider_opened(self) -> None:
        self._backends = await open_backends(self._backend_urls)
        # What is alive now (modules, settings, config, the crawl's components) lives as long
        # as the crawl: kept out of the collector's full passes, each of which scanned it all
        # and held up the reactor, and every engine's next request with it, 50-70 ms. Given
        # back to the collector when the spider closes (a process may crawl again).
        gc.collect()
        gc.freeze()

    # -- the registry of queries -------------------------------------------------------------

    def query(self, query_id: int) -> QuerySession | None:
        return self.queries.get(query_id)

    def register(self, session: QuerySession) -> None:
        self.queries[session.query_id] = session

    def queued_requests(self) -> dict[str, float]:
        """Requests the running queries may still send, by engine (the frontier's backlog)."""
        queued: dict[str, float] = {}
        for session in self.queries.values():
            for source in session.sources:
                queued[source] = queued.get(source, 0) + session.remaining_requests(source)
        return queued

    async def wait_for_room(self, concurrency: int) -> None:
        """Until fewer than `concurrency` queries are running."""
        async with self._room:
            await self._room.wait_for(lambda: len(self.queries) < concurrency)

    async def wait_for_a_close(self, timeout_s: float) -> None:
        """Until one of the queries closes, or `timeout_s` seconds."""
        async with self._room:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), timeout_s)

    def page_request(
        self,
        session: QuerySession,
        spec: EngineSpec,
        page_number: int,
        tokens: dict[str, str] | None = None,
    ) -> PageRequest:
        args = session.arguments
        return build_page_request(
            spec,
            args.query,
            page_number,
            region=args.region,
            time_range=args.time_range,
            tokens=tokens,
            secrets=self.secrets,
        )

    def warn_once(self, key: str, message: str, *args: Any) -> None:
        """A WARNING said once per crawl (a batch runs the same engines many times)."""
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message, *args)

    def keep_entry_leases(self, lease_s: float) -> None:
        """Renew the leases of the batch entries this crawl runs, every third of `lease_s`."""

        async def renew() -> None:
            entries = [q.batch_entry_id for q in self.queries.values() if q.batch_entry_id]
            if entries:
                await self.store.renew_entry_leases(entries, owner=self.owner, lease_s=lease_s)

        if self._lease_renewal is None:
            self._lease_renewal = LoopingCall(lambda: deferred_from_coro(renew()))
            self._lease_renewal.start(lease_s / 3, now=False)

    # -- storing pages and closing queries ---------------------------------------------------

    async def settle(self, session: QuerySession) -> None:
        """Store the query's complete pages; once they are all stored, fetch its citation
        graph if it has one to fetch; close it once nothing of it is left."""
        for page in session.take_completed_pages():
            await self._store_page(page)
        if session.paging_over and self.storage_failure is None and self.citations.wanted(session):
            await self.citations.begin(session)
            return  # it settles again when the graph is done
        if session.done:
            # Cut short by a backend failure: left to `resume=true`.
            await self._close(
                session,
                QueryStatus.FINISHED if self.storage_failure is None else QueryStatus.INTERRUPTED,
            )

    def settle_later(self, session: QuerySession) -> None:
        """`settle` from a place that cannot await (an errback)."""
        self.run_later(self.settle(session))

    def run_later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in the background; the crawl stays open until it has ended."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("lyra background work failed", exc_info=task.exception())

    async def _store_page(self, page: CompletedPage) -> None:
        if self._store_failed:
            return  # closing: nothing more can be written
        try:
            await self.store.store_page(page.record, page.items)
        except BackendError as exc:
            self._store_failed = True
            record = page.record
            self.backend_failed(
                exc,
                f"pages before {record.source} page {record.page_number} of query "
                f"{record.query_id} are stored complete",
            )

    def backend_failed(self, error: BackendError, kept: str) -> None:
        """A backend refused a write: say so once, and close the crawl (exit status 1).

        Whatever fails after it for the same reason (requests whose quota or rate slot can no
        longer be written) is the crawl stopping, not news: it is logged at DEBUG.
        """
        if self.storage_failure is not None:
            logger.debug("after the backend failure: %s", error)
            return
        self.storage_failure = error
        logger.error("%s; stopping the crawl: %s", error, kept)
        # Not awaited: closing waits for the item being stored, which waits for this.
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=STORAGE_ERROR))

    async def _close(self, session: QuerySession, status: QueryStatus) -> None:
        session.closing = True
        try:
            for page in session.take_completed_pages():
                await self._store_page(page)
            if not self._store_failed:
                await close_query(self, session, status)
        finally:
            self.queries.pop(session.query_id, None)
            async with self._room:
                self._room.notify_all()

    # -- waiting outside Scrapy's concurrency ------------------------------------------------

    @asynccontextmanager
    async def outside_concurrency(self, request: Request) -> AsyncIterator[None]:
        """Run the block's wait without the request counting against CONCURRENT_REQUESTS.

        Scrapy counts every request between the engine and the download handler, waits in
        middlewares included, so requests sleeping until a slow engine's next slot would stall
        every other engine of the crawl. The crawl is kept open while any request waits.
        """
        downloader = self.crawler.engine.downloader
        downloader.active.discard(request)
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1
            downloader.active.add(request)

    def spider_idle(self) -> None:
        if self._waiting or self._tasks:
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
        if self._lease_renewal is not None and self._lease_renewal.running:
            self._lease_renewal.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        status = self._closing_status(reason)
        failure = str(self.storage_failure) if self.storage_failure is not None else None
        for session in list(self.queries.values()):
            session.cancel_unfinished(failure)
            session.ledger.flush_all()
            if not self._store_failed:
                await self.citations.cancel(session)
            await self._close(session, status)
        if self._backends is not None:
            await self._backends.close()
        self.parser_thread.shutdown(wait=False)
        gc.unfreeze()
