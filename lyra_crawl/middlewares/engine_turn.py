"""Engine turns: within one process, an engine's requests pass the politeness chain one at a
time, in the order they came; each pass starts from the request's identity alone.

The turn is taken before the breaker, quota and rate checks and given back once the answer (or
error) has passed them all, so each check sees the state the previous request of its engine
left: a request never goes out on a breaker that opened while it waited, and only the head of
an engine's queue ever asks the Coordinator for the send slot. Requests waiting for their turn
leave Scrapy's shared concurrency (CrawlSession.outside_concurrency), so a slow engine's queue
never holds up the others.

Each pass replaces the request's RequestState with a fresh copy of its identity: the breaker's
trial, the rate lease and the previous verdict of a retried or redirected request are gone.
Always on; no settings.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from scrapy import Request
from scrapy.http import Response

from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.request_state import META_KEY


class EngineTurnMiddleware(EngineMiddleware):
    def __init__(self, session: CrawlSession) -> None:
        super().__init__(session)
        self._turns: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._holders: dict[str, Request] = {}

    async def process_request(self, request: Request) -> None:
        state = self.state_of(request)
        if state is None:
            return
        request.meta[META_KEY] = state.fresh()
        turn = self._turns[state.engine]
        if turn.locked():
            async with self.session.outside_concurrency(request):
                await turn.acquire()
        else:
            await turn.acquire()
        self._holders[state.engine] = request

    def process_response(self, request: Request, response: Response) -> Response:
        self._end_turn(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> Any:
        self._end_turn(request)
        return None

    def _end_turn(self, request: Request) -> None:
        state = self.state_of(request)
        if state is not None and self._holders.get(state.engine) is request:
            del self._holders[state.engine]
            self._turns[state.engine].release()
