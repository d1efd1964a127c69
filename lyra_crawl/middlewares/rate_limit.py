"""Rate limit: keep requests to one engine at least 1/qps apart across every process.

An engine's send slot lives in `engine_rate`. A request takes it with one atomic conditional
statement, which succeeds only when the slot is free; it then holds the slot until its answer
(or error) comes back, and the release frees it 1/qps later. The spacing thus counts from the
previous answer, so the engine never sees two requests closer than 1/qps, however long a
process takes between taking the slot and putting the request on the wire (startup, a busy
reactor). The lease runs out after DOWNLOAD_TIMEOUT + 1/qps in case its process died.

A request that finds the slot taken sleeps (without blocking the reactor, outside the shared
concurrency, see base.py) and asks again, so a slow engine's wait never holds up the others.
Waits are counted under `lyra/<engine>/rate/waits` and their total under
`lyra/<engine>/rate/waited_s`.

This replaces Scrapy's per-slot DOWNLOAD_DELAY, which paces one process only and which
AutoThrottle overrides; SerpSpider still gives each engine its own download slot with
concurrency 1, delay 0 and jitter 0.

Settings: LYRA_RATE_LIMIT_ENABLED (default on), LYRA_CONFIG_DIR, LYRA_DB_PATH,
DOWNLOAD_TIMEOUT; qps per engine in engines.yaml.
"""

from __future__ import annotations

import asyncio
from typing import Any

from scrapy import Request
from scrapy.http import Response

from lyra_crawl.middlewares.base import EngineMiddleware

LEASE_META = "lyra_rate_lease"


class RateLimitMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_RATE_LIMIT_ENABLED"

    async def process_request(self, request: Request) -> None:
        engine = self.engine_of(request)
        if engine is None:
            return
        interval = self._interval(engine)
        lease = self.download_timeout + interval
        while True:
            wait, token = self.storage.claim_rate_slot(engine, lease)
            if token is not None:
                request.meta[LEASE_META] = token
                return
            # A slot held by a request in flight has no known end: look again after 1/qps.
            wait = min(wait, interval)
            self.count(engine, "rate/waits")
            self.count(engine, "rate/waited_s", wait)
            async with self.outside_concurrency(request):
                await asyncio.sleep(wait)

    def process_response(self, request: Request, response: Response) -> Response:
        self._release(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> Any:
        self._release(request)
        return None

    def _interval(self, engine: str) -> float:
        return 1.0 / self.config.policy(engine).qps

    def _release(self, request: Request) -> None:
        engine = self.engine_of(request)
        token = request.meta.pop(LEASE_META, None)
        if engine is not None and token is not None:
            self.storage.release_rate_slot(engine, token, self._interval(engine))
