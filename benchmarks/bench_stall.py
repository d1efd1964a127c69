"""reactor_stall_ms_p99: how late the reactor runs while 4 crawl processes share one database.

Four `scrapy crawl serp` processes start at once against one simulator and one SQLite file,
three times over, each paging one query through Google's 50 pages of 10 results (over plain
HTTP; strategy exhaustive; the simulator gives each query 500 results so no page is empty),
with Google at QPS (shared by the four) and no daily limit, rate limit, quota and breaker on:
every request takes the engine's quota and its send slot and every page is written, all in the
one file, while the pages themselves cost little to parse. A fifth writer holds the file's
write lock 25 ms in every 75 ms, as a big batch's page writes, a report job or a backup would;
without it the four crawls' own transactions are too short for a wait to show.
benchmarks/loop_lag.py records, in each process, how late a timer due every 5 ms fires; the
figures are percentiles over every tick of the four processes.

`.no_politeness`: the same four processes with the politeness chain off, each paced by a Scrapy
download slot delay to the request rate the first run reached (`reactor_stall_requests_per_s`,
as the simulator saw it), so both runs do the same work per second and lag from CPU is alike
on both sides: the difference is the lag the politeness chain's database work causes. Pages
are still stored in that run, so waits on the page writes remain in it.

benchmarks/before_issue12.json holds the figures of the code before the crawl sessions and the
async backends, measured with this same file; they are printed beside, with its commit.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

from lyra_crawl import settings as project_settings
from lyra_crawl.config import POLICY_FILE, load_config
from lyra_crawl.simulator.config import write_paging_config
from lyra_crawl.simulator.process import running_simulator

HERE = Path(__file__).resolve().parent
PROCESSES = 4
ROUNDS = 3
# Google's qps, shared by the four processes: over 5 s for their 4 x 50 pages.
QPS = 50.0
# The simulator's results per query: Google's 50 pages of 10 all have results.
RESULTS_TOTAL = 500
BEFORE = HERE / "before_issue12.json"


def run(shared_dir: Path) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        log = folder / "requests.jsonl"
        log.touch()
        options = ["--no-google-js", "--results-total", str(RESULTS_TOTAL), "--request-log"]
        with running_simulator([*options, str(log)]) as simulator_url:
            config = _fast_google(folder / "config")
            pace_s = 0.0
            for politeness, suffix in ((True, ""), (False, ".no_politeness")):
                lags: list[float] = []
                requests, seconds = 0, 0.0
                for round_number in range(ROUNDS):
                    run_folder = folder / f"run{suffix}-{round_number}"
                    run_folder.mkdir()
                    seen = len(_logged_times(log))
                    with _Contender(run_folder / "shared.sqlite3"):
                        lags += _four_processes(
                            run_folder, simulator_url, config, politeness, pace_s
                        )
                    times = _logged_times(log)[seen:]
                    requests += len(times)
                    seconds += times[-1] - times[0]
                figures.update(_percentiles(lags, suffix))
                rate = requests / seconds
                figures[f"reactor_stall_requests_per_s{suffix}"] = rate
                pace_s = PROCESSES / rate
    if BEFORE.exists():
        before = json.loads(BEFORE.read_text())
        print(f"   (.before: commit {before['commit']}, {BEFORE.name})", flush=True)
        figures.update({f"{name}.before": value for name, value in before["figures"].items()})
    return figures


def _logged_times(log: Path) -> list[float]:
    """When the simulator received each request so far."""
    return [json.loads(line)["time"] for line in log.read_text().splitlines()]


def _fast_google(folder: Path) -> Path:
    write_paging_config(folder, render="http")
    path = folder / POLICY_FILE
    policy = yaml.safe_load(path.read_text())
    policy["engines"]["google"].update(qps=QPS, daily_limit=None)
    path.write_text(yaml.safe_dump(policy))
    load_config(folder)
    return folder


def _four_processes(
    folder: Path, simulator_url: str, config: Path, politeness: bool, pace_s: float
) -> list[float]:
    """Lags of 4 crawls at once; each sends Google one request per `pace_s` at most."""
    switch = "true" if politeness else "false"
    env = {
        **os.environ,
        "LYRA_SIMULATOR_URL": simulator_url,
        "LYRA_DB_PATH": str(folder / "shared.sqlite3"),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_RATE_LIMIT_ENABLED": switch,
        "LYRA_QUOTA_ENABLED": switch,
        "LYRA_BREAKER_ENABLED": switch,
        "LYRA_BROWSER_ENABLED": "false",
    }
    extensions = {**getattr(project_settings, "EXTENSIONS", {}), "benchmarks.loop_lag.LoopLag": 10}
    slots = {"google": {"concurrency": 1, "delay": pace_s, "randomize_delay": False}}
    processes = []
    for number in range(PROCESSES):
        lag_file = folder / f"lag-{number}.json"
        command = [
            sys.executable,
            "-m",
            "scrapy",
            "crawl",
            "serp",
            *("-a", f"query=stall benchmark {number}", "-a", "engine=google"),
            *("-a", "sources=serp"),
            *("-a", "strategy=exhaustive", "-a", "cache=off"),
            *("-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", f"LOOP_LAG_FILE={lag_file}"),
            *("-s", f"DOWNLOAD_SLOTS={json.dumps(slots)}", "-s", "LOG_LEVEL=ERROR"),
        ]
        processes.append(
            (
                subprocess.Popen(
                    command,
                    cwd=HERE.parent,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
                lag_file,
            )
        )
    lags: list[float] = []
    for process, lag_file in processes:
        _, stderr = process.communicate(timeout=600)
        if process.returncode != 0:
            raise RuntimeError(f"crawl failed: {stderr[-2000:]}")
        lags += json.loads(lag_file.read_text())
    return lags


class _Contender(threading.Thread):
    """Another writer of the same file: holds its write lock 25 ms in every 75 ms, as a large
    batch's page writes, a report job or a backup would."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self._done = threading.Event()

    def __enter__(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS bench_contender (n INTEGER)")
        conn.close()
        self.start()

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join()

    def run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, timeout=60)
        while not self._done.is_set():
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO bench_contender VALUES (1)")
            time.sleep(0.025)
            conn.execute("COMMIT")
            time.sleep(0.05)
        conn.close()


def _percentiles(lags: list[float], suffix: str) -> dict[str, float]:
    ordered = sorted(lags)
    cuts = statistics.quantiles(ordered, n=100, method="inclusive")
    return {
        f"reactor_stall_ms_p50{suffix}": cuts[49],
        f"reactor_stall_ms_p99{suffix}": cuts[98],
        f"reactor_stall_ms_max{suffix}": ordered[-1],
    }
