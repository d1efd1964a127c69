"""Daily quota: reserve one unit of the engine's `daily_limit` before each request goes out.

The reservation is one atomic step in the Coordinator (engine, UTC date), so crawls in any
number of processes sharing it never exceed the limit between them. A spent quota refuses the
request with RequestRefused (stop reason `quota`), counted under `lyra/<engine>/refused/quota`;
units taken are counted under `lyra/<engine>/quota/reserved`. Engines whose daily_limit is null
are counted but never refused. An engine with `allowed_hours` refuses requests outside its UTC
windows the same way (stop reason `quota`).

Settings: LYRA_QUOTA_ENABLED (default on); daily_limit and allowed_hours per engine in
engines.yaml.
"""

from __future__ import annotations

from datetime import UTC, datetime

from scrapy import Request

from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.politeness.hours import allowed_at, describe
from lyra_crawl.politeness.quota import utc_date


class DailyQuotaMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_QUOTA_ENABLED"

    async def process_request(self, request: Request) -> None:
        state = self.state_of(request)
        if state is None:
            return
        engine = state.engine
        policy = self.config.policy(engine)
        if not allowed_at(policy.allowed_hours, datetime.now(UTC)):
            raise self.refuse(
                engine,
                "quota",
                f"{engine} takes requests only in {describe(policy.allowed_hours)} "
                "(allowed_hours in engines.yaml)",
            )
        limit = policy.daily_limit
        date = utc_date()
        if not await self.session.coordinator.reserve_quota(engine, date, limit):
            raise self.refuse(
                engine,
                "quota",
                f"daily quota spent: {engine} has used its {limit} requests for {date} (UTC); "
                "it resets at midnight UTC, or raise daily_limit in engines.yaml",
            )
        self.count(engine, "quota/reserved")
