"""`scrapy engines`: per engine, whether it is enabled, its breaker, today's usage and its qps.

Reads engines.yaml (LYRA_CONFIG_DIR) and the database (LYRA_DB_PATH) that crawls share.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from scrapy.commands import ScrapyCommand

from lyra_crawl.config import load_config
from lyra_crawl.middlewares.daily_quota import utc_date
from lyra_crawl.politeness.breaker import BreakerState, refuses_now
from lyra_crawl.storage import open_storage


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Show each engine's breaker, today's usage against its daily limit, and its qps"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
        storage = open_storage(self.settings["LYRA_DB_PATH"])
        today, now = utc_date(), time.time()
        print(f"engines on {today} (UTC), database {storage.path}")
        try:
            for name, policy in config.policies.items():
                spec = config.engine(name)
                health = storage.engine_health(name)
                if health.state is BreakerState.CLOSED or not refuses_now(health, now):
                    breaker = "closed" if health.state is BreakerState.CLOSED else "trial due"
                else:
                    until = datetime.fromtimestamp(health.open_until or 0.0, UTC)
                    breaker = (
                        f"{health.state.value} until {until:%Y-%m-%d %H:%M:%S}Z"
                        f" ({health.last_reason})"
                    )
                limit = "-" if policy.daily_limit is None else str(policy.daily_limit)
                status = "enabled" if policy.enabled else "disabled"
                if not spec.implemented:
                    status += ", not implemented"
                print(
                    f"{name:<12} {status:<26} breaker {breaker:<40} "
                    f"today {storage.usage(name, today)}/{limit:<5} qps {policy.qps:g}"
                )
        finally:
            storage.close()
