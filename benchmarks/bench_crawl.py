"""crawl_throughput_ratio: pages/s of `serp` (limits off) / pages/s of a bare Scrapy spider.

Both fetch the same simulator pages — 20 queries x 10 pages, four queries on each of five HTML
engines — in one crawler each, with one request in flight per engine, in separate processes,
alternating three times, and both yield one item per result; the figure is the ratio of
medians. With five engines side by side both are bound by their own work, not by the engines'
answers.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.crawl_runner import median_figures, pages_per_second
from lyra_crawl.simulator.config import write_paging_config
from lyra_crawl.simulator.process import running_simulator

# HTML engines paged by URL formula, no token page (Google's page over plain HTTP).
ENGINES = ("mojeek", "bing", "brave", "ecosia", "google")
QUERIES_PER_ENGINE = 4
PAGES = 10
ROUNDS = 3


def run(shared_dir: Path) -> dict[str, float]:
    queries = [
        (engine, f"benchmark query {number}")
        for engine in ENGINES
        for number in range(QUERIES_PER_ENGINE)
    ]
    speeds: dict[str, list[float]] = {"serp": [], "bare": []}
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_simulator(["--no-google-js"]) as simulator_url,
    ):
        config_dir = write_paging_config(Path(tmp) / "config", render="http")
        for round_number in range(ROUNDS):
            for kind in ("bare", "serp"):
                db_path = Path(tmp) / f"{kind}-{round_number}.sqlite3"
                speeds[kind].append(
                    pages_per_second(
                        kind, simulator_url, db_path, queries, PAGES, config_dir=config_dir
                    )
                )
    return median_figures("crawl_pages_per_s", "crawl_throughput_ratio", speeds)
