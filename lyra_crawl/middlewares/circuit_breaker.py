"""Circuit breaker: refuse requests to an engine whose breaker is open, in every process.

State per engine lives in the database (`engine_health`, see lyra_crawl/breaker.py for the
state machine); thresholds and cool-downs come from the `breaker:` section of engines.yaml.
A refused request fails with RequestRefused (stop reason `blocked`), counted under
`lyra/<engine>/refused/blocked`. Responses are recorded afterwards: a block page (marked by
BlockDetectionMiddleware) or a 5xx / network error is a failure, anything else a success.

Within one process an engine takes one request at a time through the whole chain (its turn),
so the breaker, quota and rate checks each see the state left by the previous response: a
request that waited never goes out on a breaker that opened while it waited.

Settings: LYRA_BREAKER_ENABLED (default on), LYRA_CONFIG_DIR, LYRA_DB_PATH, DOWNLOAD_TIMEOUT
(bounds a half-open trial's lease).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections import defaultdict
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector

from lyra_crawl.config import LyraConfig
from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.politeness.breaker import (
    NETWORK,
    Admission,
    Health,
    admit,
    record_failure,
    record_success,
)
from lyra_crawl.storage import Storage

logger = logging.getLogger(__name__)

TRIAL_META = "lyra_breaker_trial"
BLOCK_META = "lyra_block"
RETRY_AFTER_META = "lyra_retry_after"


class CircuitBreakerMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_BREAKER_ENABLED"

    def __init__(self, crawler: Crawler, config: LyraConfig, storage: Storage) -> None:
        super().__init__(crawler, config, storage)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        self._turns: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._turn_holders: dict[str, Request] = {}

    async def process_request(self, request: Request) -> None:
        engine = self.engine_of(request)
        if engine is None:
            return
        turn = self._turns[engine]
        if turn.locked():
            async with self.outside_concurrency(request):
                await turn.acquire()
        else:
            await turn.acquire()
        self._turn_holders[engine] = request
        # The trial's lease covers its rate wait and its download.
        lease = self.download_timeout + 2.0 / self.config.policy(engine).qps
        admission: Admission = self.storage.change_engine_health(
            engine,
            lambda health: admit(health, now=time.time(), owner=self.owner, trial_lease_s=lease),
        )
        if not admission.allowed:
            raise self.refuse(engine, "blocked", f"{engine}: {admission.reason}")
        if admission.trial:
            request.meta[TRIAL_META] = True
            self.count(engine, "breaker/trial")
            logger.info("%s: breaker half-open, sending one trial request", engine)

    def process_response(self, request: Request, response: Response) -> Response:
        engine = self.engine_of(request)
        if engine is not None:
            block = request.meta.get(BLOCK_META)
            if block is not None:
                self._failed(engine, request, block, request.meta.get(RETRY_AFTER_META))
            elif response.status >= 500:
                self._failed(engine, request, NETWORK, None)
            else:
                trial = bool(request.meta.get(TRIAL_META))
                self.storage.change_engine_health(
                    engine, lambda health: (None, record_success(health, trial=trial))
                )
                if trial:
                    logger.info("%s: trial request succeeded, breaker closed", engine)
            self._end_turn(engine, request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> Any:
        engine = self.engine_of(request)
        if engine is not None:
            if not isinstance(exception, IgnoreRequest):
                self._failed(engine, request, NETWORK, None)
            self._end_turn(engine, request)
        return None

    def _failed(self, engine: str, request: Request, kind: str, retry_after: float | None) -> None:
        trial = bool(request.meta.get(TRIAL_META))
        stats = self.stats
        trip_breaker(
            self.storage, self.config, stats, engine, kind, retry_after=retry_after, trial=trial
        )

    def _end_turn(self, engine: str, request: Request) -> None:
        if self._turn_holders.get(engine) is request:
            del self._turn_holders[engine]
            self._turns[engine].release()


def trip_breaker(
    storage: Storage,
    config: LyraConfig,
    stats: StatsCollector,
    engine: str,
    kind: str,
    *,
    retry_after: float | None = None,
    trial: bool = False,
) -> None:
    """Record a failure of `kind` on `engine`'s breaker, opening it when the policy says so."""
    policy = config.breaker

    def change(before: Health) -> tuple[tuple[Health, Health], Health]:
        after = record_failure(
            before, policy, kind=kind, now=time.time(), trial=trial, retry_after_s=retry_after
        )
        return (before, after), after

    before, after = storage.change_engine_health(engine, change)
    stats.inc_value(f"lyra/{engine}/breaker/failure/{kind}")
    if after.trips > before.trips:
        stats.inc_value(f"lyra/{engine}/breaker/trip")
        logger.warning(
            "%s: breaker open for %.0f s after %s (trip %d)",
            engine,
            (after.open_until or 0.0) - time.time(),
            kind,
            after.trips,
        )
