"""One batch run by several worker processes sharing one store: does a second worker pay off?

- `distributed_speedup_2_workers`: a batch meant to be CPU-bound (1,000 queries of 3 pages,
  each on a named engine, the choosable ones in turn, every engine at 1,000 qps with no daily
  limit, so the engines are not the limit; parse-heavy pages: the simulator's results pages
  padded to PAGE_KB, as heavy as real engines' pages, 200-900 KB when they show results,
  where its own weigh 4-14 KB), recorded in a fresh SQLite store (coordination in the same
  file), and crawled by `scrapy crawl serp -a batch=ID` in 1 process; recorded again
  in another fresh store and crawled by 2 processes at once: requests per second with 2 ÷ with
  1, each over the span from its first request to its last, as the simulator saw them (process start
  and the last worker's wait for the others are left out; their wall times are printed beside).
  Each worker takes entries under a lease as it has room (lyra_crawl.session.launch), as Scrapyd
  nodes do. On a 2-core machine the simulator shares the cores with the workers, so 2.0 is out
  of reach. One run of each swings by 10-20 % on this machine, so ROUNDS pairs run one after
  the other (1 worker, then 2) and the figure is the median of their ratios.
- `distributed_speedup_ceiling_2_workers`: what 2 workers would reach with every core of the
  machine busy for their whole span at the CPU their run took per request
  (`distributed_cpu_ms_per_request_2_worker`: the workers' and the simulator's, without what
  the workers' processes take to start and end, measured as the same workers run again on the
  finished batch), ÷ the rate of 1 worker: the physical limit of the figure above on this
  machine, measured in the same run.
  One worker does not use a core: traced on a 2-core machine, it used 1.07 cores in all (main
  thread 0.54, the SQLite thread 0.33, the parse thread 0.21) while its SQLite thread was busy
  for about 85 % of the span (a transaction's BEGIN and COMMIT, and its turns for the GIL, take most
  of that), and its rate stayed the same with 48 queries open instead of 16, 8 engines instead
  of 6, or queries opened twice as fast; 2 workers use the 2 cores.
- `distributed_speedup_2_workers.postgres_redis` (and its ceiling): the same with the backends
  meant for several workers, a PostgreSQL store and Redis coordination (real servers on
  loopback, started here as the tests start them): the SQLite file's one write lock is out of
  the way. The servers' CPU is not counted in its ceiling, which is therefore above the true one.
- `distributed_requests_per_s_{1,2}_worker`, `distributed_wall_s_{1,2}_worker`,
  `distributed_cpu_ms_per_request_{1,2}_worker`: the figures behind them (medians over the
  rounds).
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_batch import ROOT, _raised_config
from lyra_crawl.backend_urls import sqlite_url
from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.batch.files import entry_specs, load_batch
from lyra_crawl.config import load_config
from lyra_crawl.simulator.process import running_simulator
from tests.servers.postgres import running_postgres
from tests.servers.redis import running_redis

QUERIES = 1000
PAGES = 3
QPS = 1000.0
CONCURRENCY = 16
PAGE_KB = 200
ROUNDS = 3


def run(shared_dir: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-distributed-") as tmp:
        folder = Path(tmp)
        config, _ = _raised_config(folder / "config", QPS)
        batch_file = _batch_file(folder / "batch.yaml", config)

        def sqlite(run: str) -> dict[str, str]:
            return {"LYRA_DB_URL": sqlite_url(folder / f"store-{run}.sqlite3")}

        figures.update(_speedup(batch_file, config, folder, sqlite, suffix=""))
        with running_postgres() as postgres, running_redis(folder / "redis") as redis:

            def at_scale(run: str) -> dict[str, str]:
                database = f"bench_distributed_{run}"
                with postgres.admin() as admin:
                    admin.execute(f"CREATE DATABASE {database} OWNER lyra")
                redis.flush()
                return {"LYRA_DB_URL": postgres.url(database), "LYRA_COORDINATION_URL": redis.url}

            figures.update(_speedup(batch_file, config, folder, at_scale, suffix=".postgres_redis"))
    return figures


def _speedup(
    batch_file: Path,
    config: Path,
    folder: Path,
    backends_for: Callable[[str], dict[str, str]],
    *,
    suffix: str,
) -> dict[str, float]:
    """ROUNDS times the batch crawled by 1 worker, then by 2, each on fresh backends
    `backends_for` names (from a name of the run)."""
    rates: dict[int, list[float]] = {1: [], 2: []}
    walls: dict[int, list[float]] = {1: [], 2: []}
    cpu_ms: dict[int, list[float]] = {1: [], 2: []}
    for round_number in range(ROUNDS):
        for workers in (1, 2):
            run = f"{workers}_{round_number}"
            log = folder / f"requests{suffix}-{run}.jsonl"
            simulator = ["--request-log", str(log), "--page-kb", str(PAGE_KB)]
            cpu_before = _children_cpu_s()
            with running_simulator(simulator) as simulator_url:
                backends = backends_for(run)
                batch_id = _record(batch_file, config, backends)
                walls[workers].append(
                    _crawl(workers, batch_id, backends, config, simulator_url, folder)
                )
                crawled = _children_cpu_s()
                # The same workers on the finished batch: they start, take nothing and end.
                _crawl(workers, batch_id, backends, config, simulator_url, folder)
                start_and_end_s = _children_cpu_s() - crawled
            # Every child has exited and been waited for, the simulator too: its CPU is counted.
            cpu_s = _children_cpu_s() - cpu_before - 2 * start_and_end_s
            times = [json.loads(line)["time"] for line in log.read_text().splitlines()]
            rates[workers].append(len(times) / (times[-1] - times[0]))
            cpu_ms[workers].append(1000 * cpu_s / len(times))
    cores = len(os.sched_getaffinity(0))
    figures = {
        f"distributed_speedup_2_workers{suffix}": statistics.median(
            two / one for one, two in zip(rates[1], rates[2], strict=True)
        ),
        # Every core busy for the whole span at the 2-worker run's CPU per request.
        f"distributed_speedup_ceiling_2_workers{suffix}": statistics.median(
            1000 * cores / two / one for one, two in zip(rates[1], cpu_ms[2], strict=True)
        ),
    }
    for workers in (1, 2):
        figures[f"distributed_requests_per_s_{workers}_worker{suffix}"] = statistics.median(
            rates[workers]
        )
        figures[f"distributed_wall_s_{workers}_worker{suffix}"] = statistics.median(walls[workers])
        figures[f"distributed_cpu_ms_per_request_{workers}_worker{suffix}"] = statistics.median(
            cpu_ms[workers]
        )
    return figures


def _children_cpu_s() -> float:
    """CPU seconds (user and system) of this process's children that have exited."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _batch_file(path: Path, config: Path) -> Path:
    """QUERIES queries of PAGES pages, each on a named engine (the choosable ones in turn), so
    that every run parses the very same pages."""
    engines = [
        name
        for name, policy in load_config(config).policies.items()
        if policy.enabled and policy.weight > 0
    ]
    lines = [
        f"defaults: {{serp_max_pages: {PAGES}, strategy: fixed, sources: [serp]}}",
        "queries:",
        *(
            f"  - {{query: distributed benchmark {n}, engine: {engines[n % len(engines)]}}}"
            for n in range(QUERIES)
        ),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _record(batch_file: Path, config: Path, backends: dict[str, str]) -> int:
    """The batch recorded in the store, as `scrapy batch` records it; its id."""
    batch = load_batch(batch_file, load_config(config))

    async def create(opened: Backends) -> int:
        record = await opened.store.create_batch(
            source=str(batch_file), content_hash=batch.content_hash, entries=entry_specs(batch)
        )
        return record.id

    return asyncio.run(with_backends(backends, create))


def _crawl(
    workers: int,
    batch_id: int,
    backends: dict[str, str],
    config: Path,
    simulator_url: str,
    folder: Path,
) -> float:
    """Seconds from starting `workers` crawl processes of the batch to the last one's exit."""
    env = {
        **os.environ,
        **backends,
        "LYRA_SIMULATOR_URL": simulator_url,
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
    logs = [folder / f"worker{n}-of-{workers}.log" for n in range(workers)]
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
