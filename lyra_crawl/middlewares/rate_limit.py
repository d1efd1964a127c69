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
sleeps until then), or at the end of another process's lease (the head looks again after
1/qps, the earliest that holder could free it). The wait happens outside Scrapy's shared
concurrency, so a slow engine never holds up the others. Waits are counted under
`lyra/<engine>/rate/waits`, their total under `lyra/<engine>/rate/waited_s`.

This replaces Scrapy's per-slot DOWNLOAD_DELAY, which paces one process only and which
AutoThrottle overrides; SerpSpider still gives each engine its own download slot with
concurrency 1, delay 0 and jitter 0.

Settings: LYRA_RATE_LIMIT_ENABLED (default on), DOWNLOAD_TIMEOUT; qps per engine in
engines.yaml.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scrapy import Request
from scrapy.http import Response

from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.session.crawl import CrawlSession

# Another process holds the slot until its answer comes: look again after 1/qps, then back off
# (doubling, up to this) so that at high qps waiting processes do not poll the coordinator
# every millisecond. Engines slower than this many qps are not affected.
HELD_BACKOFF_CAP_S = 0.05


class RateLimitMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_RATE_LIMIT_ENABLED"

    def __init__(self, session: CrawlSession) -> None:
        super().__init__(session)
        # engine -> loop time at which the slot this process last released is free again
        self._free_at: dict[str, float] = {}

    async def process_request(self, request: Request) -> None:
        state = self.state_of(request)
        if state is None:
            return
        engine = state.engine
        interval = self._interval(engine)
        lease = self.session.download_timeout + interval
        known_wait = self._free_at.get(engine, 0.0) - asyncio.get_running_loop().time()
        if known_wait > 0:
            await self._wait(request, engine, known_wait)
        held_wait = interval
        while True:
            claim = await self.session.coordinator.claim_rate_slot(engine, lease)
            if claim.granted:
                state.lease = claim.token
                return
            if not claim.held:
                await self._wait(request, engine, claim.wait_s)
                continue
            await self._wait(request, engine, min(claim.wait_s, held_wait))
            held_wait = max(interval, min(2 * held_wait, HELD_BACKOFF_CAP_S))

    async def _wait(self, request: Request, engine: str, seconds: float) -> None:
        self.count(engine, "rate/waits")
        self.count(engine, "rate/waited_s", seconds)
        async with self.session.outside_concurrency(request):
            await asyncio.sleep(seconds)

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
