"""Rate limit: keep requests to one engine at least 1/qps apart across every process.

An engine's send slot lives in the Coordinator. The request at the head of its engine's queue
(EngineTurnMiddleware lets one through at a time) claims it; the claim holds the slot until the
answer (or error) comes back, and the release frees it 1/qps later. The spacing thus counts
from the previous answer, so the engine never sees two requests closer than 1/qps, however long
a process takes between taking the slot and putting the request on the wire. The lease runs out
after DOWNLOAD_TIMEOUT + 1/qps in case its process died.

A slot this process released is not claimed before its known free time: the head sleeps until
then first, so the usual case (one process per engine) costs one claim per request, not a
refused claim and a second one. The claim still decides; another process may hold the slot.

A refused claim says when the slot is free again: at a known time once released (the head
sleeps until then), or at the end of another process's lease. Then the head waits for that
process's release, which the Coordinator tells every process that waits for it (never by
polling the store), and claims 1/qps after it; it looks again on its own after RELEASE_CHECK_S
at most, should no word of the release come (its holder died; a process the word cannot reach).
The wait happens outside Scrapy's shared concurrency, so a slow engine never holds up the
others. Waits are counted under `lyra/<engine>/rate/waits`, their total under
`lyra/<engine>/rate/waited_s`; the waits for a release under `rate/release_waits`, those that
ended without word of it under `rate/release_waits_unheard`.

This replaces Scrapy's per-slot DOWNLOAD_DELAY, which paces one process only and which
AutoThrottle overrides; SerpSpider still gives each engine its own download slot with
concurrency 1, delay 0 and jitter 0.

Settings: LYRA_RATE_LIMIT_ENABLED (default on), DOWNLOAD_TIMEOUT; qps per engine in
engines.yaml.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from scrapy import Request
from scrapy.http import Response

from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.session.crawl import CrawlSession

T = TypeVar("T")

# The longest a head waits for word of a release before it claims again.
RELEASE_CHECK_S = 1.0


class RateLimitMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_RATE_LIMIT_ENABLED"

    def __init__(self, session: CrawlSession) -> None:
        super().__init__(session)
        # engine -> loop time at which its slot is known to be free again (released by this
        # process, or as a refused claim or a release heard of says)
        self._free_at: dict[str, float] = {}

    async def process_request(self, request: Request) -> None:
        state = self.state_of(request)
        if state is None:
            return
        engine = state.engine
        interval = self._interval(engine)
        lease = self.session.download_timeout + interval
        loop = asyncio.get_running_loop()
        while True:
            known_wait = self._free_at.get(engine, 0.0) - loop.time()
            if known_wait > 0:
                await self._wait(request, engine, asyncio.sleep(known_wait))
            claim = await self.session.coordinator.claim_rate_slot(engine, lease)
            if claim.granted:
                state.lease = claim.token
                return
            if not claim.held:
                self._free_at[engine] = loop.time() + claim.wait_s
            elif await self._release_heard(request, engine, min(claim.wait_s, RELEASE_CHECK_S)):
                self._free_at[engine] = loop.time() + interval

    async def _release_heard(self, request: Request, engine: str, timeout_s: float) -> bool:
        """Wait for the release of the slot another process holds: whether word of it came."""
        self.count(engine, "rate/release_waits")
        heard = await self._wait(
            request, engine, self.session.coordinator.slot_released(engine, timeout_s)
        )
        if not heard:
            self.count(engine, "rate/release_waits_unheard")
        return heard

    async def _wait(self, request: Request, engine: str, waiting: Awaitable[T]) -> T:
        self.count(engine, "rate/waits")
        started = time.monotonic()
        try:
            async with self.session.outside_concurrency(request):
                return await waiting
        finally:
            self.count(engine, "rate/waited_s", time.monotonic() - started)

    async def process_response(self, request: Request, response: Response) -> Response:
        await self._release(request)
        return response

    async def process_exception(self, request: Request, exception: Exception) -> Any:
        await self._release(request)
        return None

    def _interval(self, engine: str) -> float:
        return 1.0 / self.config.policy(engine).qps

    async def _release(self, request: Request) -> None:
        state = self.state_of(request)
        if state is None or state.lease is None:
            return
        token, state.lease = state.lease, None
        interval = self._interval(state.engine)
        self._free_at[state.engine] = asyncio.get_running_loop().time() + interval
        await self.record_answer(
            state.engine, self.session.coordinator.release_rate_slot(state.engine, token, interval)
        )
