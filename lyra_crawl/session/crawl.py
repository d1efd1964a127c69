"""CrawlSession: what every lyra component of one crawler shares, and finds a query's state in.

The config (LYRA_CONFIG_DIR), the backends (LYRA_DB_URL / LYRA_DB_PATH, LYRA_COORDINATION_URL),
the simulator URL, the API secrets, the folder pages are saved in (LYRA_DATA_DIR), the crawl's
first backend failure, and the registry of its RunningQuery objects by query id. The spider,
middlewares and pipelines get it in `from_crawler` (`CrawlSession.of(crawler)`) and find a
request's or item's query through it.

The Scrapy extension that builds it, opens and closes its backends with the spider and keeps
the crawl open while lyra has work Scrapy cannot see is its subclass
(lyra_crawl.session.extension); how a query opens, moves on and closes is in the modules that
take a CrawlSession (opening, settling, citations, closing), none of which it imports.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import AsyncIterator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from datetime import UTC, datetime
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.task import LoopingCall

from lyra_crawl.backend_urls import urls_from_settings
from lyra_crawl.backends import Backends, open_backends
from lyra_crawl.backends.protocols import Coordinator, ResultStore
from lyra_crawl.config import EngineSpec, LyraConfig
from lyra_crawl.engines.base import PageRequest
from lyra_crawl.engines.request import build_page_request, secrets_from_settings
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.politeness.refusals import BREAKER, HOURS, QUOTA, EngineRefusal, engine_refusal
from lyra_crawl.records import BackendError, BatchEntry
from lyra_crawl.session.running_query import RunningQuery
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
        self.queries: dict[int, RunningQuery] = {}
        # Batch entries this crawl took and has not opened yet: pending again if it closes
        # first (lyra_crawl.session.launch takes them, the extension's close puts them back).
        self.entries_taken: dict[int, BatchEntry] = {}
        # The first backend failure, which closes the crawl; and whether the store itself
        # failed (then nothing more is written) or only the Coordinator (then what was fetched
        # is still stored and the queries closed).
        self.storage_failure: BackendError | None = None
        self.store_failed = False
        # Set once the spider closes: its backends close, and nothing more is opened.
        self.closed = False
        self._room = asyncio.Condition()
        self._waiting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._warned: set[str] = set()
        self._lease_renewal: LoopingCall | None = None
        # Pages are parsed here, off the reactor (lyra_crawl.session.judging).
        self.parser_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lyra-parse")

    @staticmethod
    def of(crawler: Crawler) -> CrawlSession:
        """The crawler's session (components call this in from_crawler)."""
        session = crawler.get_extension(CrawlSession)
        if session is None:
            raise RuntimeError(
                "CrawlSession is not enabled: keep "
                "lyra_crawl.session.extension.CrawlSessionExtension in EXTENSIONS"
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

    async def open_backends(self) -> None:
        self._backends = await open_backends(self._backend_urls)

    async def close_backends(self) -> None:
        """The spider has closed and its queries with it: backends closed, parser stopped."""
        if self._backends is not None:
            await self._backends.close()
        self.parser_thread.shutdown(wait=False)

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

    async def store_completed_pages(self, query: RunningQuery) -> None:
        """Store the query's pages whose every item is kept or dropped, each whole."""
        for page in query.take_completed_pages():
            if self.store_failed:
                return  # closing: nothing more can be written
            try:
                await self.store.store_page(page.record, page.items)
            except BackendError as exc:
                self.store_failed = True
                record = page.record
                self.backend_failed(
                    exc,
                    f"pages before {record.source} page {record.page_number} of query "
                    f"{record.query_id} are stored complete",
                )

    async def engine_refusals(self, engines: list[str]) -> dict[str, EngineRefusal]:
        """Those of `engines` that refuse requests right now by a rule this crawl's
        middlewares enforce (`enforced_refusals`), each with its refusal: a batch holds their
        entries back."""
        states = await self.coordinator.engine_states(engines, utc_date())
        now = datetime.now(UTC)
        refusals = (
            engine_refusal(
                name,
                self.config.policy(name),
                state.health,
                state.used_today,
                now,
                enforced=self.enforced_refusals,
            )
            for name, state in states.items()
        )
        return {refusal.engine: refusal for refusal in refusals if refusal is not None}

    # -- the registry of queries -------------------------------------------------------------

    def query(self, query_id: int) -> RunningQuery | None:
        return self.queries.get(query_id)

    def register(self, query: RunningQuery) -> None:
        self.queries[query.query_id] = query

    async def unregister(self, query: RunningQuery) -> None:
        """The query has closed: it makes room for the next one."""
        self.queries.pop(query.query_id, None)
        async with self._room:
            self._room.notify_all()

    def queued_requests(self) -> dict[str, float]:
        """Requests the running queries may still send, by engine (the frontier's backlog)."""
        queued: dict[str, float] = {}
        for query in self.queries.values():
            for source in query.sources:
                queued[source] = queued.get(source, 0) + query.remaining_requests(source)
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
        query: RunningQuery,
        spec: EngineSpec,
        page_number: int,
        tokens: dict[str, str] | None = None,
    ) -> PageRequest:
        args = query.arguments
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

    # -- work Scrapy cannot see --------------------------------------------------------------

    def run_later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in the background; the crawl stays open until it has ended."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("lyra background work failed", exc_info=task.exception())

    @property
    def busy(self) -> bool:
        """Whether requests wait outside Scrapy's concurrency or background work runs."""
        return bool(self._waiting or self._tasks)

    async def stop_background_work(self) -> None:
        """The spider closes: no more lease renewals; the background work already started ends."""
        if self._lease_renewal is not None and self._lease_renewal.running:
            self._lease_renewal.stop()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    @asynccontextmanager
    async def outside_concurrency(self, request: Request) -> AsyncIterator[None]:
        """Run the block's wait without the request counting against CONCURRENT_REQUESTS.

        Scrapy counts every request between the engine and the download handler, waits in
        middlewares included, so requests sleeping until a slow engine's next slot would stall
        every other engine of the crawl. The crawl is kept open while any request waits.
        """
        engine = self.crawler.engine
        engine.downloader.active.discard(request)
        self._waiting += 1
        # Scrapy asks for its next request on its own events only (an answer, a heartbeat every
        # 5 s): told now, the room this wait leaves goes to the next request at once.
        engine._slot.nextcall.schedule()
        try:
            yield
        finally:
            self._waiting -= 1
            engine.downloader.active.add(request)
