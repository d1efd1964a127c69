"""Redis as the Coordinator, failing: unreachable at start, stopped mid-crawl.

Both run `scrapy crawl` against a real redis-server with a password. Unreachable: one `error:`
line naming the URL without its password, exit 2, nothing sent. Stopped mid-crawl (the simulator
holds page 4 back while Redis goes down): one clear error, the pages before stay stored whole,
the source stops with reason `error`, exit 1, and no request goes out once Redis is gone
(fail closed: a request needs its quota reservation and its send slot).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import edited_config, query_db, run_scrapy, scrapy_env, start_scrapy
from tests.reliability.test_kill_and_resume import (
    assert_whole_pages,
    wait_for_pages,
    wait_until_held,
)
from tests.servers.redis import PASSWORD, RedisServer

CRAWL = ["crawl", "serp", "-a", "engine=mojeek", "-a", "strategy=fixed", "-a", "sources=serp"]


@pytest.mark.e2e
def test_an_unreachable_redis_at_start_is_one_error_line_without_the_password(
    simulator, db_path, refused_port: int
):
    url = f"redis://:{PASSWORD}@127.0.0.1:{refused_port}/0"
    env = {**scrapy_env(simulator, db_path), "LYRA_COORDINATION_URL": url}

    result = run_scrapy(*CRAWL, "-a", "query=x", env=env)

    assert result.returncode == 2, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    shown = f"redis://:***@127.0.0.1:{refused_port}/0"
    assert errors == [
        f"error: LYRA_COORDINATION_URL {shown} is unreachable (Connection refused): "
        "start Redis there or fix the URL"
    ], result.stderr[-3000:]
    assert PASSWORD not in result.stdout + result.stderr
    assert simulator.requests() == []


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("page_4", "qps"),
    [
        # Page 4 is in flight when Redis goes: its answer is kept, its slot cannot be released.
        ("in flight", 20),
        # Page 4 waits 2 s for its send slot when Redis goes: it is never sent.
        ("waiting", 0.5),
    ],
)
def test_redis_stopped_mid_crawl_stops_the_source_with_one_clear_error(
    start_simulator, tmp_path, disposable_redis: RedisServer, page_4, qps
):
    db_path = tmp_path / "lyra.sqlite3"
    simulator = start_simulator(*(["--hold-at", "mojeek:4"] if page_4 == "in flight" else []))
    config = edited_config(
        tmp_path / "config", lambda doc: doc["engines"]["mojeek"].update(qps=qps)
    )
    env = {
        **scrapy_env(simulator, db_path),
        "LYRA_COORDINATION_URL": disposable_redis.url,
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_RATE_LIMIT_ENABLED": "true",
    }
    process = start_scrapy(*CRAWL, "-a", "query=redis gone", "-a", "serp_max_pages=8", env=env)
    wait_for_pages(process, db_path, 3)
    if page_4 == "in flight":
        wait_until_held(process, simulator, "mojeek", 4)
    disposable_redis.stop()
    stopped_at = time.time()
    if page_4 == "in flight":
        simulator.release("mojeek", 4)
    _, stderr = process.communicate(timeout=120)

    assert process.returncode == 1, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, stderr[-3000:]
    assert f"LYRA_COORDINATION_URL redis://:***@127.0.0.1:{disposable_redis.port}/0" in errors[0]
    assert "Connection refused" in errors[0] and "restart Redis" in errors[0]
    assert PASSWORD not in stderr and "Traceback" not in stderr
    assert_whole_pages(db_path)
    pages = [row[0] for row in query_db(db_path, "SELECT page_number FROM serp_pages ORDER BY 1")]
    assert pages == ([1, 2, 3, 4] if page_4 == "in flight" else [1, 2, 3])
    requests = simulator.requests("mojeek")
    assert len(requests) == len(pages), "every request sent was answered and stored"
    assert all(request["time"] < stopped_at for request in requests), "none sent without Redis"
    row = query_db(db_path, "SELECT status, stop_reason, errors FROM queries")[0]
    assert row["status"] == "interrupted"
    assert json.loads(row["stop_reason"]) == {"mojeek": "error"}
    assert "LYRA_COORDINATION_URL" in json.loads(row["errors"])["mojeek"]
