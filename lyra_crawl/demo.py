"""`make demo`: start the simulator, crawl three DuckDuckGo pages from it, print what was stored.

The simulator is on loopback, so the demo turns per-engine pacing off
(LYRA_RATE_LIMIT_ENABLED=false); against real engines it stays on.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.reports.text import query_summary
from lyra_crawl.simulator.process import running_simulator

DEMO_DB = Path("data/demo.sqlite3")
DEMO_QUERY = "climate adaptation"


def main() -> int:
    with running_simulator() as simulator_url:
        print(f"simulator: {simulator_url}")
        env = dict(
            os.environ,
            LYRA_SIMULATOR_URL=simulator_url,
            LYRA_DB_PATH=str(DEMO_DB.resolve()),
            LYRA_RATE_LIMIT_ENABLED="false",
        )
        # cache=refresh: every demo run is a real crawl, not an answer from the last one.
        arguments = [
            f"query={DEMO_QUERY}",
            "engine=duckduckgo",
            "serp_max_pages=3",
            "cache=refresh",
        ]
        command = [sys.executable, "-m", "scrapy", "crawl", "serp", "-s", "LOG_LEVEL=WARNING"]
        for argument in arguments:
            command += ["-a", argument]
        print("running:", " ".join(command[2:]))
        crawl = subprocess.run(command, env=env, check=False)
        if crawl.returncode != 0:
            print(f"crawl failed with exit status {crawl.returncode}", file=sys.stderr)
            return crawl.returncode
    print(f"\nstored in {DEMO_DB}:")
    print(run_sync(with_backends({"LYRA_DB_PATH": str(DEMO_DB)}, latest_summary)))
    return 0


async def latest_summary(backends: Backends) -> str:
    (query_id,) = await backends.store.query_ids(last=1)
    return await query_summary(backends, query_id)


if __name__ == "__main__":
    sys.exit(main())
