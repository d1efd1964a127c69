"""One batch run by several worker processes sharing one store: does a second worker pay off?

- `distributed_speedup_2_workers`: a CPU-bound batch (every engine at 1,000 qps with no daily
  limit, so the crawl's own CPU is the limit, not the engines), recorded in a fresh SQLite
  store and crawled by `scrapy crawl serp -a batch=ID` in 1 process; recorded again in another
  fresh store and crawled by 2 processes at once: requests per second with 2 ÷ with 1, each
  over the span from its first request to its last, as the simulator saw them (process start
  and the last worker's wait for the others are left out; their wall times are printed beside).
  Each worker takes entries under a lease as it has room (lyra_crawl.session.launch), as Scrapyd
  nodes do.
  On a 2-core machine the simulator shares the cores with the workers, so 2.0 is out of reach.
- `distributed_requests_per_s_{1,2}_worker`, `distributed_wall_s_{1,2}_worker`: the figures
  behind it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_batch import ROOT, _batch_file, _raised_config
from lyra_crawl.backends import Backends, sqlite_url, with_backends
from lyra_crawl.batch.files import entry_specs, load_batch
from lyra_crawl.config import load_config
from lyra_crawl.simulator.process import running_simulator

QUERIES = 1000
PAGES = 3
QPS = 1000.0
CONCURRENCY = 16


def run(shared_dir: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp:
        folder = Path(tmp)
        config, _ = _raised_config(folder / "config", QPS)
        batch_file = _batch_file(folder / "batch.yaml", QUERIES, pages=PAGES)
        figures: dict[str, float] = {}
        rates: dict[int, float] = {}
        for workers in (1, 2):
            log = folder / f"requests-{workers}.jsonl"
            with running_simulator(["--request-log", str(log)]) as simulator_url:
                store = folder / f"store-{workers}.sqlite3"
                batch_id = _record(batch_file, config, store)
                wall = _crawl(workers, batch_id, store, config, simulator_url)
            times = [json.loads(line)["time"] for line in log.read_text().splitlines()]
            rates[workers] = len(times) / (times[-1] - times[0])
            figures[f"distributed_requests_per_s_{workers}_worker"] = rates[workers]
            figures[f"distributed_wall_s_{workers}_worker"] = wall
    figures["distributed_speedup_2_workers"] = rates[2] / rates[1]
    return figures


def _record(batch_file: Path, config: Path, store: Path) -> int:
    """The batch recorded in a new store, as `scrapy batch` records it; its id."""
    batch = load_batch(batch_file, load_config(config))

    async def create(backends: Backends) -> int:
        record = await backends.store.create_batch(
            source=str(batch_file), content_hash=batch.content_hash, entries=entry_specs(batch)
        )
        return record.id

    return asyncio.run(with_backends({"LYRA_DB_URL": sqlite_url(store)}, create))


def _crawl(workers: int, batch_id: int, store: Path, config: Path, simulator_url: str) -> float:
    """Seconds from starting `workers` crawl processes of the batch to the last one's exit."""
    env = {
        **os.environ,
        "LYRA_SIMULATOR_URL": simulator_url,
        "LYRA_DB_URL": sqlite_url(store),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_BROWSER_ENABLED": "false",
        "LYRA_PROGRESS_INTERVAL": "0",
    }
    command = [
        sys.executable,
        *("-m", "scrapy", "crawl", "serp"),
        *("-a", f"batch={batch_id}", "-a", f"concurrency={CONCURRENCY}"),
        *("-s", "LOG_LEVEL=ERROR"),
    ]
    logs = [store.with_suffix(f".worker{n}.log") for n in range(workers)]
    started = time.perf_counter()
    # Each worker's stderr goes to a file: a pipe nobody reads would block its logging.
    processes = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log.open("w")
        )
        for log in logs
    ]
    for process in processes:
        process.wait()
    wall = time.perf_counter() - started
    failures = [
        log.read_text()[-2000:] for p, log in zip(processes, logs, strict=True) if p.returncode
    ]
    if failures:
        raise RuntimeError(f"a worker failed: {json.dumps(failures)}")
    return wall
