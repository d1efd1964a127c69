"""Batches at scale on the simulator: makespan against the engines' capacity, memory, CPU.

A temporary config raises every engine the frontier may choose (weight > 0) to 20 qps with no
daily limit; rate limit, quota and breaker stay on.

The 1,000-query figures are medians over ROUNDS rounds (a round: the batch, then the bare
spider on its requests), as one run swings by 10-20 % on a shared machine.

- `batch_makespan_ratio`: `scrapy batch` of 1,000 queries without an engine (`sources: [serp]`,
  3 pages, strategy fixed): the time from its first request to its last ÷ (requests ÷ Σ qps of
  those engines), the physical limit. `batch_wall_ratio` is the same over the whole command
  (process start, recording the batch, closing).
- `batch_cpu_ms_per_request`: CPU time of that batch process per request, beside
  `bare_cpu_ms_per_request`: a bare Scrapy spider fetching the very requests the batch sent
  (read back from the simulator's log), one request in flight per engine, yielding each
  result's URL and title; `batch_cpu_ratio` is the first over the second (each round's, then
  their median).
- The same three with `_2_processes`: that batch crawled by `scrapy batch --processes 2`, one
  crawl process per core of this machine (the CPU is the command's and both crawls'), right
  after the bare spider in the same round.
- `batch_rss_mb_1k`, `batch_rss_mb_10k`: peak resident memory of the batch process and its
  children for 1,000 and 10,000 queries of one page each (qps raised to 1,000 so the runs stay
  short; memory is what they measure), sampled every 50 ms from /proc.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from lyra_crawl.config import POLICY_FILE
from lyra_crawl.simulator.config import write_paging_config
from lyra_crawl.simulator.process import running_simulator

ROOT = Path(__file__).resolve().parent.parent
QPS = 20.0
# `scrapy batch --processes` of the second run of each round: one per core of this machine.
PROCESSES = 2
# One run of the batch swings by 10-20 % on this machine: the 1,000-query figures are the
# medians of this many rounds, each a batch run and the bare spider right after it.
ROUNDS = 3


def run(shared_dir: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        config, capacity = _raised_config(folder / "config", QPS)
        batch = _batch_file(folder / "batch-1k.yaml", 1_000, pages=3)
        rounds = [_round(folder, number, batch, config, capacity) for number in range(ROUNDS)]
        figures.update(
            {name: statistics.median(measured[name] for measured in rounds) for name in rounds[0]}
        )
        with running_simulator() as simulator_url:
            fast, _ = _raised_config(folder / "config-fast", 1000.0)
            for count, name in ((1_000, "1k"), (10_000, "10k")):
                batch = _batch_file(folder / f"rss-{name}.yaml", count, pages=1)
                measured = _run_batch(batch, simulator_url, folder / f"rss-{name}.sqlite3", fast)
                figures[f"batch_rss_mb_{name}"] = measured["peak_rss_mb"]
        figures["batch_rss_growth_10k_over_1k"] = (
            figures["batch_rss_mb_10k"] / figures["batch_rss_mb_1k"]
        )
    return figures


def _round(
    folder: Path, number: int, batch: Path, config: Path, capacity: float
) -> dict[str, float]:
    """One run of the 1,000-query batch and, right after it, the bare spider on its requests,
    then the same batch crawled by PROCESSES processes: the figures that compare them."""
    log = folder / f"requests-{number}.jsonl"
    with running_simulator(["--request-log", str(log)]) as simulator_url:
        measured = _run_batch(batch, simulator_url, folder / f"1k-{number}.sqlite3", config)
        requests = _requests(log)
        bare = _run_bare(requests, simulator_url, config, folder / f"bare-{number}.jsonl")
    bare_cpu = 1000 * bare["cpu_s"] / bare["responses"]
    figures = {
        "batch_requests_1k": len(requests),
        **_batch_figures(measured, requests, capacity, bare_cpu, ""),
        "bare_cpu_ms_per_request": bare_cpu,
    }
    log = folder / f"requests-{number}-processes.jsonl"
    with running_simulator(["--request-log", str(log)]) as simulator_url:
        db_path = folder / f"1k-{number}-processes.sqlite3"
        measured = _run_batch(batch, simulator_url, db_path, config, processes=PROCESSES)
        requests = _requests(log)
    suffix = f"_{PROCESSES}_processes"
    return {**figures, **_batch_figures(measured, requests, capacity, bare_cpu, suffix)}


def _requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _batch_figures(
    measured: dict[str, float],
    requests: list[dict[str, Any]],
    capacity: float,
    bare_cpu: float,
    suffix: str,
) -> dict[str, float]:
    """A batch run's makespan, wall time and CPU per request against the limit and the bare
    spider, each figure's name ending in `suffix`."""
    span = requests[-1]["time"] - requests[0]["time"]
    limit = len(requests) / capacity
    batch_cpu = 1000 * measured["cpu_s"] / len(requests)
    figures = {
        "batch_makespan_s": span,
        "batch_makespan_ratio": span / limit,
        "batch_wall_ratio": measured["wall_s"] / limit,
        "batch_cpu_ms_per_request": batch_cpu,
        "batch_cpu_ratio": batch_cpu / bare_cpu,
    }
    return {name + suffix: value for name, value in figures.items()}


def _raised_config(folder: Path, qps: float) -> tuple[Path, float]:
    """The bundled config, paging on, every choosable engine at `qps` without a daily limit;
    returns the folder and Σ qps of those engines."""
    write_paging_config(folder)
    path = folder / POLICY_FILE
    policy = yaml.safe_load(path.read_text())
    capacity = 0.0
    for engine in policy["engines"].values():
        if engine.get("weight", 1.0) > 0 and engine.get("enabled", True):
            engine.update(qps=qps, daily_limit=None)
            capacity += qps
    path.write_text(yaml.safe_dump(policy))
    return folder, capacity


def _batch_file(path: Path, count: int, *, pages: int) -> Path:
    lines = [
        f"defaults: {{serp_max_pages: {pages}, strategy: fixed, sources: [serp]}}",
        "queries:",
        *(f"  - batch benchmark {n}" for n in range(count)),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _run_batch(
    batch: Path, simulator_url: str, db_path: Path, config: Path, processes: int = 1
) -> dict[str, float]:
    env = {
        **os.environ,
        "LYRA_SIMULATOR_URL": simulator_url,
        "LYRA_DB_PATH": str(db_path),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_BROWSER_ENABLED": "false",
    }
    command = [sys.executable, "-m", "scrapy", "batch", str(batch), "-s", "LOG_LEVEL=ERROR"]
    if processes > 1:
        command += ["--processes", str(processes)]
    return _measured(command, env)


def _run_bare(
    requests: list[dict[str, Any]], simulator_url: str, config: Path, out: Path
) -> dict[str, float]:
    plan = out.with_suffix(".plan.json")
    plan.write_text(json.dumps(requests))
    command = [
        sys.executable,
        "-m",
        "benchmarks.replay_spider",
        simulator_url,
        str(plan),
        str(config),
        str(out),
    ]
    measured = _measured(command, dict(os.environ))
    measured["responses"] = json.loads(out.read_text())["responses"]
    return measured


def _measured(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """Run `command` from the project folder: wall time, CPU time, peak RSS of its tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    peak = _PeakRss(process.pid)
    peak.start()
    _, stderr = process.communicate()
    wall = time.perf_counter() - started
    peak.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command[2:4])} failed: {stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak.most / 2**20}


class _PeakRss(threading.Thread):
    """The largest resident memory a process and its descendants held at once."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.most = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.most = max(self.most, sum(_rss(pid) for pid in _tree(self.pid)))
            time.sleep(0.05)

    def stop(self) -> None:
        self._done.set()
        self.join()


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
