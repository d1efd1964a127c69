"""Circuit breaker: refuse requests to an engine whose breaker is open, in every process.

Each engine's breaker lives in the Coordinator (see lyra_crawl/politeness/breaker.py for the
state machine); thresholds and cool-downs come from the `breaker:` section of engines.yaml.
A refused request fails with RequestRefused (stop reason `blocked`; `error` when the breaker
opened on network failures: the engine is unreachable, not blocking), counted under
`lyra/<engine>/refused/<stop reason>`. Answers are recorded afterwards: a block page (block
detection's verdict) or a 5xx / network error is a failure, anything else a success. Once a
cool-down has passed, one request becomes the half-open trial (`lyra/<engine>/breaker/trial`);
its answer closes or reopens the breaker.

Settings: LYRA_BREAKER_ENABLED (default on), DOWNLOAD_TIMEOUT (bounds a trial's lease).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response

from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.politeness.breaker import NETWORK
from lyra_crawl.politeness.retry_after import retry_after_s
from lyra_crawl.records import BackendError
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.request_state import RequestState

logger = logging.getLogger(__name__)


def retry_after(response: Response) -> float | None:
    """Seconds the answer's Retry-After asks for, in seconds or as an HTTP-date."""
    header = response.headers.get("Retry-After")
    date = response.headers.get("Date")
    return retry_after_s(
        header.decode("latin-1") if header is not None else None,
        now=time.time(),
        date=date.decode("latin-1") if date is not None else None,
    )


class CircuitBreakerMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_BREAKER_ENABLED"

    async def process_request(self, request: Request) -> None:
        state = self.state_of(request)
        if state is None:
            return
        engine = state.engine
        # The trial's lease covers its rate wait and its download.
        lease = self.session.download_timeout + 2.0 / self.config.policy(engine).qps
        admission = await self.session.coordinator.breaker_admit(
            engine, owner=self.session.owner, trial_lease_s=lease
        )
        if not admission.allowed:
            stop_reason = "error" if admission.unreachable else "blocked"
            raise self.refuse(engine, stop_reason, f"{engine}'s {admission.reason}")
        if admission.trial:
            state.trial = True
            self.count(engine, "breaker/trial")
            logger.info("%s: breaker half-open, sending one trial request", engine)

    async def process_response(self, request: Request, response: Response) -> Response:
        state = self.state_of(request)
        if state is None:
            return response
        trial, state.trial = state.trial, False
        await self.record_answer(state.engine, self._record(state, response, trial))
        return response

    async def _record(self, state: RequestState, response: Response, trial: bool) -> None:
        """The answer's verdict on the breaker: a failure (block page, 5xx) or a success."""
        engine, verdict = state.engine, state.verdict
        if verdict is not None and verdict.blocked:
            await trip_breaker(
                self.session,
                engine,
                verdict.outcome.value,
                retry_after=retry_after(response),
                trial=trial,
            )
        elif response.status >= 500:
            await trip_breaker(self.session, engine, NETWORK, trial=trial)
        else:
            await self.session.coordinator.breaker_success(engine, trial=trial)
            if trial:
                logger.info("%s: trial request succeeded, breaker closed", engine)

    async def process_exception(self, request: Request, exception: Exception) -> Any:
        state = self.state_of(request)
        # A refusal, or a backend failure before the request went out: not the engine's doing.
        if state is not None and not isinstance(exception, (IgnoreRequest, BackendError)):
            trial, state.trial = state.trial, False
            await self.record_answer(
                state.engine, trip_breaker(self.session, state.engine, NETWORK, trial=trial)
            )
        return None


async def trip_breaker(
    session: CrawlSession,
    engine: str,
    kind: str,
    *,
    retry_after: float | None = None,
    trial: bool = False,
) -> None:
    """Record a failure of `kind` on `engine`'s breaker, opening it when the policy says so."""
    change = await session.coordinator.breaker_failure(
        engine, session.config.breaker, kind=kind, trial=trial, retry_after_s=retry_after
    )
    session.stats.inc_value(f"lyra/{engine}/breaker/failure/{kind}")
    if change.tripped:
        session.stats.inc_value(f"lyra/{engine}/breaker/trip")
        logger.warning(
            "%s: breaker open for %.0f s after %s (trip %d)",
            engine,
            (change.after.open_until or 0.0) - time.time(),
            kind,
            change.after.trips,
        )
