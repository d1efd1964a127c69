"""What lyra's downloader middlewares share: the crawl session, refusals, counting.

Each middleware gets the CrawlSession in `from_crawler` and raises NotConfigured when its
`LYRA_*_ENABLED` setting is off. Requests that carry no RequestState (not lyra's), or whose
engine engines.yaml does not list, pass through untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import ClassVar, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from lyra_crawl.records import BackendError
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.request_state import RequestRefused, RequestState, request_state

logger = logging.getLogger(__name__)


class EngineMiddleware:
    """Base of the middlewares that act on lyra's engine requests."""

    # The setting that switches the middleware on; None: always on.
    enabled_setting: ClassVar[str | None] = None

    def __init__(self, session: CrawlSession) -> None:
        self.session = session
        self.config = session.config
        self.stats = session.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if cls.enabled_setting and not crawler.settings.getbool(cls.enabled_setting):
            raise NotConfigured(f"{cls.enabled_setting} is off")
        return cls(CrawlSession.of(crawler))

    def state_of(self, request: Request) -> RequestState | None:
        state = request_state(request.meta)
        return state if state is not None and state.engine in self.config.policies else None

    def count(self, engine: str, event: str, value: float = 1) -> None:
        self.stats.inc_value(f"lyra/{engine}/{event}", value)

    async def record_answer(self, engine: str, step: Awaitable[None]) -> None:
        """Run `step`, which records an answer (or error) of `engine` in the Coordinator.

        The request went out with its reservation and slot: if the backend fails now, the
        answer is kept all the same, and the crawl stops, since no request may go out without
        the backend.
        """
        try:
            await step
        except BackendError as exc:
            self.session.backend_failed(exc, f"the answer {engine} gave is kept")

    def refuse(self, engine: str, stop_reason: str, message: str) -> RequestRefused:
        self.count(engine, f"refused/{stop_reason}")
        logger.warning("request to %s refused: %s", engine, message)
        return RequestRefused(engine, stop_reason, message)
