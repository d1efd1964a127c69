"""Politeness figures, measured side by side on the simulator with real `scrapy crawl` processes.

- ratelimit_min_gap_ratio: four processes crawl one engine at qps 10 through one database; the
  smallest gap between two requests the simulator received, divided by 1/qps (>= 1 is polite).
- middleware_overhead_ratio: pages per second of one crawl with the breaker, quota and rate
  middlewares on (limits far above what the crawl uses) divided by the same crawl with them off,
  timed from the simulator's request log so process start-up is left out.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import yaml

from lyra_crawl.simulator.process import running_simulator

ROOT = Path(__file__).resolve().parent.parent
ENGINE = "mojeek"
GAP_QPS = 10.0
OVERHEAD_PAGES = 10
OVERHEAD_ROUNDS = 3
SWITCHES = ("LYRA_BREAKER_ENABLED", "LYRA_QUOTA_ENABLED", "LYRA_RATE_LIMIT_ENABLED")


def _config(folder: Path, qps: float) -> Path:
    folder.mkdir()
    for source in (ROOT / "config").glob("*.yaml"):
        shutil.copy(source, folder / source.name)
    policy_file = folder / "engines.yaml"
    doc = yaml.safe_load(policy_file.read_text())
    doc["engines"][ENGINE].update(qps=qps, daily_limit=None)
    policy_file.write_text(yaml.safe_dump(doc))
    return folder


def _crawls(count: int, env: Mapping[str, str], pages: int) -> None:
    arguments = ["-a", f"engine={ENGINE}", "-a", f"serp_max_pages={pages}", "-a", "strategy=fixed"]
    arguments += ["-a", "sources=serp", "-a", "cache=off"]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scrapy",
                "crawl",
                "serp",
                "-a",
                f"query=tidal flats {n}",
                *arguments,
            ],
            cwd=ROOT,
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for n in range(count)
    ]
    for process in processes:
        if process.wait(timeout=120) != 0:
            raise RuntimeError(f"crawl failed: {process.args}")


def _request_times(log: Path) -> list[float]:
    return sorted(json.loads(line)["time"] for line in log.read_text().splitlines() if line)


def _min_gap_ratio(work: Path) -> float:
    log = work / "gap.jsonl"
    config = _config(work / "gap-config", GAP_QPS)
    with running_simulator(["--request-log", str(log)]) as url:
        env = {
            "LYRA_SIMULATOR_URL": url,
            "LYRA_DB_PATH": str(work / "gap.sqlite3"),
            "LYRA_CONFIG_DIR": str(config),
        }
        _crawls(4, {**env, **dict.fromkeys(SWITCHES, "true")}, pages=3)
    gaps = [b - a for a, b in itertools.pairwise(_request_times(log))]
    return min(gaps) * GAP_QPS


def _overhead_ratio(work: Path) -> float:
    config = _config(work / "overhead-config", qps=1000.0)
    rates: dict[str, list[float]] = {"on": [], "off": []}
    for round_number, mode in itertools.product(range(OVERHEAD_ROUNDS), ("on", "off")):
        log = work / f"overhead-{mode}-{round_number}.jsonl"
        with running_simulator(["--request-log", str(log)]) as url:
            env = {
                "LYRA_SIMULATOR_URL": url,
                "LYRA_DB_PATH": str(work / f"overhead-{mode}.sqlite3"),
                "LYRA_CONFIG_DIR": str(config),
                **dict.fromkeys(SWITCHES, "true" if mode == "on" else "false"),
            }
            _crawls(1, env, pages=OVERHEAD_PAGES)
        times = _request_times(log)
        rates[mode].append((len(times) - 1) / (times[-1] - times[0]))
    return sum(rates["on"]) / sum(rates["off"])


def run(shared_dir: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-politeness-") as folder:
        work = Path(folder)
        return {
            "ratelimit_min_gap_ratio": round(_min_gap_ratio(work), 3),
            "middleware_overhead_ratio": round(_overhead_ratio(work), 3),
        }


if __name__ == "__main__":
    print(run(ROOT.parent / "shared"))
