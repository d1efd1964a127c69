"""Daily quota: reserve one unit of the engine's `daily_limit` before each request goes out.

The reservation is one conditional statement on `engine_usage` (engine, UTC date), so crawls in
any number of processes sharing the database never exceed the limit between them. A spent quota
refuses the request with RequestRefused (stop reason `quota`), counted under
`lyra/<engine>/refused/quota`; units taken are counted under `lyra/<engine>/quota/reserved`.
Engines whose daily_limit is null are counted but never refused.

Settings: LYRA_QUOTA_ENABLED (default on), LYRA_CONFIG_DIR, LYRA_DB_PATH.
"""

from __future__ import annotations

from datetime import UTC, datetime

from scrapy import Request

from lyra_crawl.middlewares.base import EngineMiddleware


def utc_date() -> str:
    return datetime.now(UTC).date().isoformat()


class DailyQuotaMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_QUOTA_ENABLED"

    def process_request(self, request: Request) -> None:
        engine = self.engine_of(request)
        if engine is None:
            return
        limit = self.config.policy(engine).daily_limit
        date = utc_date()
        if not self.storage.reserve_quota(engine, date, limit):
            raise self.refuse(
                engine,
                "quota",
                f"daily quota spent: {engine} has used its {limit} requests for {date} (UTC); "
                "it resets at midnight UTC, or raise daily_limit in engines.yaml",
            )
        self.count(engine, "quota/reserved")
