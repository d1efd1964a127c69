"""`scrapy engines`: per engine, whether it is enabled, its breaker, today's usage and its qps,
and whether its parser is stale.

Reads engines.yaml (LYRA_CONFIG_DIR), the Coordinator (LYRA_COORDINATION_URL) crawls share, and
the store (LYRA_DB_URL): an engine whose latest page read was in a layout its parse rules do not
read gets a second line, "parser stale since <time>", naming its last such page as saved under
LYRA_DATA_DIR (`scrapy parse-serp ENGINE FILE` shows what the rules make of it).
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime
from pathlib import Path

from scrapy.commands import ScrapyCommand

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import LyraConfig, load_config
from lyra_crawl.politeness.breaker import BreakerState, refuses_now
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.records import StaleParser
from lyra_crawl.session.saved_pages import data_dir, find_stale_page


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return (
            "Show each engine's breaker, today's usage against its daily limit, its qps, and "
            "whether its parser is stale"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
        folder = data_dir(self.settings)
        lines = run_sync(with_backends(self.settings, lambda b: engine_lines(config, b, folder)))
        for line in lines:
            print(line)


async def engine_lines(config: LyraConfig, backends: Backends, folder: Path) -> list[str]:
    """One line per engine, and a second one under an engine whose parser is stale; `folder`
    is where pages are saved (LYRA_DATA_DIR)."""
    coordinator = backends.coordinator
    today, now = utc_date(), time.time()
    stale = {parser.engine: parser for parser in await backends.store.stale_parsers()}
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
        if name in stale:
            lines.append(f"{'':<12} {stale_line(stale[name], folder)}")
    return lines


def stale_line(parser: StaleParser, folder: Path) -> str:
    """'parser stale since <time> (<pages>; last page: <file>)'."""
    since = datetime.fromisoformat(parser.since)
    pages = "1 page" if parser.pages == 1 else f"{parser.pages} pages"
    saved = find_stale_page(folder, parser.engine, parser.query_id, parser.page_number)
    where = (
        str(saved)
        if saved is not None
        else f"page {parser.page_number} of query {parser.query_id}, not saved under {folder}"
    )
    return f"parser stale since {since:%Y-%m-%d %H:%M:%S}Z ({pages}; last page: {where})"
