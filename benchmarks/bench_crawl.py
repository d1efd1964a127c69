"""crawl_throughput_ratio: pages/s of `serp` (limits off) / pages/s of a bare Scrapy spider.

Both fetch the same simulator pages — 20 queries x 10 pages, four queries on each of five HTML
engines — in one crawler each, with one request in flight per engine, in separate processes,
alternating three times, and both yield one item per result; the figure is the ratio of
medians.

`crawl_throughput_ratio` has the simulator answer each request after 50 ms, the low end of what
real engines take (200-1,000 ms): it asks whether lyra crawls as fast as a plain spider would
against engines that take time to answer. `crawl_throughput_ratio.no_latency` has it answer at
once, so both sides are bound by their own CPU: it asks what lyra's own work per page costs
(batch_cpu_ratio in bench_batch.py measures the same per request over a whole batch).
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


# Milliseconds before the simulator answers, and the suffix of the figures measured so.
LATENCIES = ((50, ""), (0, ".no_latency"))


def run(shared_dir: Path) -> dict[str, float]:
    queries = [
        (engine, f"benchmark query {number}")
        for engine in ENGINES
        for number in range(QUERIES_PER_ENGINE)
    ]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        config_dir = write_paging_config(Path(tmp) / "config", render="http")
        for latency, suffix in LATENCIES:
            options = ["--no-google-js", "--latency-ms", str(latency)]
            speeds: dict[str, list[float]] = {"serp": [], "bare": []}
            with running_simulator(options) as simulator_url:
                for round_number in range(ROUNDS):
                    for kind in ("bare", "serp"):
                        db_path = Path(tmp) / f"{kind}-{latency}-{round_number}.sqlite3"
                        speeds[kind].append(
                            pages_per_second(
                                kind, simulator_url, db_path, queries, PAGES, config_dir=config_dir
                            )
                        )
            measured = median_figures("crawl_pages_per_s", "crawl_throughput_ratio", speeds)
            figures.update({f"{name}{suffix}": value for name, value in measured.items()})
    return figures
