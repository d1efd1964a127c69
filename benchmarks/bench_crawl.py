"""crawl_throughput_ratio: pages/s of `serp` (limits off) / pages/s of a bare Scrapy spider.

Both fetch the same simulator pages (20 queries x 10 Mojeek pages, one page at a time per
query) in separate processes, alternating three times; the figure is the ratio of medians.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.crawl_runner import median_figures, pages_per_second
from lyra_crawl.simulator.process import running_simulator

QUERIES = 20
PAGES = 10
ROUNDS = 3


def _pages_per_second(kind: str, simulator_url: str, db_path: Path) -> float:
    queries = [f"benchmark query {number}" for number in range(QUERIES)]
    return pages_per_second(kind, simulator_url, db_path, queries, PAGES)


def run(shared_dir: Path) -> dict[str, float]:
    speeds: dict[str, list[float]] = {"serp": [], "bare": []}
    with tempfile.TemporaryDirectory() as tmp, running_simulator() as simulator_url:
        for round_number in range(ROUNDS):
            for kind in ("bare", "serp"):
                db_path = Path(tmp) / f"{kind}-{round_number}.sqlite3"
                speeds[kind].append(_pages_per_second(kind, simulator_url, db_path))
    return median_figures("crawl_pages_per_s", "crawl_throughput_ratio", speeds)
