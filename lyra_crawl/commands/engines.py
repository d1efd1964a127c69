"""`scrapy engines`: per engine, whether it is enabled, its breaker, today's usage and its qps.

Reads engines.yaml (LYRA_CONFIG_DIR) and the Coordinator (LYRA_COORDINATION_URL) crawls share.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from scrapy.commands import ScrapyCommand

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.config import LyraConfig, load_config
from lyra_crawl.politeness.breaker import BreakerState, refuses_now
from lyra_crawl.politeness.quota import utc_date


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Show each engine's breaker, today's usage against its daily limit, and its qps"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
        for line in run_sync(with_backends(self.settings, lambda b: engine_lines(config, b))):
            print(line)


async def engine_lines(config: LyraConfig, backends: Backends) -> list[str]:
    coordinator = backends.coordinator
    today, now = utc_date(), time.time()
    lines = [f"engines on {today} (UTC), coordinator {coordinator.url}"]
    for name, policy in config.policies.items():
        spec = config.engine(name)
        health = await coordinator.breaker_health(name)
        if health.state is BreakerState.CLOSED or not refuses_now(health, now):
            breaker = "closed" if health.state is BreakerState.CLOSED else "trial due"
        else:
            until = datetime.fromtimestamp(health.open_until or 0.0, UTC)
            breaker = (
                f"{health.state.value} until {until:%Y-%m-%d %H:%M:%S}Z ({health.last_reason})"
            )
        limit = "-" if policy.daily_limit is None else str(policy.daily_limit)
        status = "enabled" if policy.enabled else "disabled"
        if not spec.implemented:
            status += ", not implemented"
        used = await coordinator.quota_used(name, today)
        lines.append(
            f"{name:<12} {status:<26} breaker {breaker:<40} "
            f"today {used}/{limit:<5} qps {policy.qps:g}"
        )
    return lines
