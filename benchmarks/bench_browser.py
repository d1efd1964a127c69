"""browser_vs_http_pages_ratio: pages/s of Google rendered in Chromium / the same over plain HTTP.

`serp` (limits off) crawls 3 queries x 5 Google pages of the simulator, one page at a time per
query, in separate processes, alternating three times; the figure is the ratio of medians. The
browser crawls get the simulator's script-built pages, the HTTP crawls its raw-HTML twin
(--no-google-js). Each browser crawl starts its own Playwright driver and Chromium, as a real
crawl does, so the figure includes the launch.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path

from benchmarks.crawl_runner import median_figures, pages_per_second
from lyra_crawl.simulator.config import write_paging_config
from lyra_crawl.simulator.process import running_simulator

QUERIES = 3
PAGES = 5
ROUNDS = 3
# path -> (simulator options, Google's render mode)
PATHS = {"browser": ((), "browser"), "http": (("--no-google-js",), "http")}


def run(shared_dir: Path) -> dict[str, float]:
    queries = [("google", f"benchmark query {number}") for number in range(QUERIES)]
    speeds: dict[str, list[float]] = {path: [] for path in PATHS}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        setups = {
            path: (
                stack.enter_context(running_simulator(options)),
                write_paging_config(Path(tmp) / f"config-{path}", render=render),
            )
            for path, (options, render) in PATHS.items()
        }
        for round_number in range(ROUNDS):
            for path, (simulator_url, config_dir) in setups.items():
                speeds[path].append(
                    pages_per_second(
                        "serp",
                        simulator_url,
                        Path(tmp) / f"{path}-{round_number}.sqlite3",
                        queries,
                        PAGES,
                        config_dir=config_dir,
                    )
                )
    return median_figures("browser_pages_per_s", "browser_vs_http_pages_ratio", speeds)
