"""benchmarks/loop_lag.py, as bench_stall.py enables it, records a crawl's reactor lag."""

from __future__ import annotations

import json

from lyra_crawl import settings as project_settings
from tests.conftest import run_scrapy, scrapy_env


def test_loop_lag_writes_one_lag_per_tick_of_a_command_line_crawl(simulator, db_path, tmp_path):
    lag_file = tmp_path / "lag.json"
    extensions = {**getattr(project_settings, "EXTENSIONS", {}), "benchmarks.loop_lag.LoopLag": 10}

    result = run_scrapy(
        "crawl",
        "serp",
        *("-a", "query=loop lag", "-a", "engine=mojeek", "-a", "sources=serp"),
        *("-a", "strategy=fixed", "-a", "serp_max_pages=3", "-a", "cache=off"),
        *("-s", f"EXTENSIONS={json.dumps(extensions)}", "-s", f"LOOP_LAG_FILE={lag_file}"),
        env=scrapy_env(simulator, db_path),
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert len(simulator.requests("mojeek")) == 3
    lags = json.loads(lag_file.read_text())
    assert lags and all(isinstance(lag, float) and lag >= 0 for lag in lags)
