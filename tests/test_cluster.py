"""One batch over several Scrapyd nodes sharing one store and one coordinator.

Three real Scrapyd instances on loopback, each with the project deployed; `scrapy batch FILE
--scrapyd URL1,URL2,URL3` schedules one `serp -a batch=ID` job per node, and every job takes
entries from the shared store under a lease. Quotas, rate slots and breakers are exact across
the nodes; a job killed mid-batch loses nothing and stores nothing twice.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
import yaml

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.config import BreakerPolicy, load_config
from lyra_crawl.session.launch import ENTRY_POLL_S
from tests.conftest import ROOT, edited_config, in_own_loop
from tests.scrapyd_server import ScrapydServer, deploy, running_scrapyd
from tests.servers.postgres import PASSWORD as POSTGRES_PASSWORD
from tests.servers.postgres import PostgresServer, new_database
from tests.servers.redis import PASSWORD, RedisServer

PROJECT = "lyra_crawl"
NODES = 3
JOB_TIMEOUT_S = 240
CLUSTER_DATABASE = "lyra_cluster"


@pytest.fixture(scope="session")
def cluster_database(postgres_server: PostgresServer) -> Iterator[str]:
    """The PostgreSQL database the nodes' environment names, for the session (each parallel
    worker has its own PostgreSQL server)."""
    with new_database(postgres_server, CLUSTER_DATABASE) as url:
        yield url


@pytest.fixture(scope="module")
def nodes(
    tmp_path_factory: pytest.TempPathFactory,
    redis_server: RedisServer,
    cluster_database: str,
    project_egg: Path,
) -> Iterator[list[ScrapydServer]]:
    """Three Scrapyd nodes, each with the project deployed, for the module: its tests run on one
    parallel worker (a module fixture's tests are one xdist group), so the nodes are made once
    in the whole run, not once per worker. A URL with a password never
    travels with a job (Scrapyd logs job arguments): each node has the PostgreSQL and Redis URLs
    in its environment, as a systemd unit would give them; a job's own settings win over them."""
    folder = tmp_path_factory.mktemp("cluster")
    servers: list[ScrapydServer] = []
    environment = {"LYRA_DB_URL": cluster_database, "LYRA_COORDINATION_URL": redis_server.url}
    contexts = [running_scrapyd(folder / f"node{n}", environment) for n in range(NODES)]
    try:
        for n, context in enumerate(contexts):
            server = context.__enter__()
            servers.append(server)
            deploy(server, ROOT, folder / f"project{n}", project_egg)
        yield servers
    finally:
        for context in contexts[: len(servers)]:
            context.__exit__(None, None, None)


@pytest.fixture(params=["sqlite", "sqlite+redis", "postgres+redis"])
def backend_settings(
    request: pytest.FixtureRequest, tmp_path: Path, cluster_database: str
) -> dict[str, str]:
    """The LYRA_* settings naming the store and coordinator every node shares: one SQLite file
    for both; SQLite and Redis; or PostgreSQL (emptied first) and Redis."""
    store, _, coordination = request.param.partition("+")
    if store == "sqlite":
        settings = {"LYRA_DB_URL": f"sqlite:///{tmp_path / 'shared.sqlite3'}"}
    else:
        _empty(cluster_database)
        settings = {"LYRA_DB_URL": cluster_database}
    if coordination == "redis":
        settings["LYRA_COORDINATION_URL"] = request.getfixturevalue("redis_url")
    return settings


def _empty(database_url: str) -> None:
    """Every lyra table of the database emptied, ids from 1 again."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                " AND tablename != 'schema_version'"
            )
        ]
        if tables:
            conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


@pytest.fixture
def cluster_config(tmp_path: Path) -> Callable[[Callable[[dict[str, Any]], None]], Path]:
    """Factory: a copy of config/ whose engines.yaml was changed by `edit`."""

    def make(edit: Callable[[dict[str, Any]], None]) -> Path:
        return edited_config(tmp_path / f"config{len(list(tmp_path.glob('config*')))}", edit)

    return make


def batch_file(folder: Path, name: str, queries: list[str], **defaults: Any) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"defaults": defaults, "queries": queries}))
    return path


def run_batch(
    path: Path,
    nodes: list[ScrapydServer],
    settings: dict[str, str],
    *extra: str,
    wait: bool = True,
) -> subprocess.Popen[str] | subprocess.CompletedProcess[str]:
    """`scrapy batch PATH --scrapyd NODES…` with `settings` as this run's environment."""
    command = [
        sys.executable,
        "-m",
        "scrapy",
        "batch",
        str(path),
        "--scrapyd",
        ",".join(node.url for node in nodes),
        "--poll-interval",
        "0.5",
        "--timeout",
        str(JOB_TIMEOUT_S),
        *extra,
    ]
    env = {**os.environ, "LYRA_PROGRESS_INTERVAL": "0", **settings}
    if not wait:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S + 60
    )


def read_store(settings: dict[str, str], work: Callable[[Backends], Any]) -> Any:
    return in_own_loop(with_backends(settings, work))


async def entries_and_pages(backends: Backends) -> tuple[list[Any], dict[int, list[Any]]]:
    """The first batch's entries, and each entry's query's stored pages."""
    store = backends.store
    entries = await store.batch_entries(1)
    pages = {
        entry.position: await store.pages(entry.query_id)
        for entry in entries
        if entry.query_id is not None
    }
    return entries, pages


async def query_statuses(backends: Backends) -> dict[int, str]:
    """The first batch's entries' queries' statuses, by entry position."""
    store = backends.store
    return {
        entry.position: query.status
        for entry in await store.batch_entries(1)
        if entry.query_id is not None and (query := await store.query(entry.query_id))
    }


def job_logs(nodes: list[ScrapydServer]) -> str:
    logs = []
    for node in nodes:
        for log in (node.folder / "logs" / PROJECT / "serp").glob("*.log"):
            logs.append(f"--- {node.url} {log.name}\n{log.read_text(errors='replace')[-2500:]}")
    return "\n".join(logs)


def assert_jobs_logged_no_error(nodes: list[ScrapydServer]) -> None:
    """No job of any node logged an ERROR, anywhere in its log."""
    errors = [
        f"{log.name}: {line}"
        for node in nodes
        for log in (node.folder / "logs" / PROJECT / "serp").glob("*.log")
        for line in log.read_text(errors="replace").splitlines()
        if " ERROR: " in line
    ]
    assert not errors, "\n".join(errors[:10])


def assert_no_password_in_logs(nodes: list[ScrapydServer], output: str) -> None:
    """Neither the command's output, nor Scrapyd's logs, nor a job's log holds a password."""
    for node in nodes:
        for log in [node.folder / "scrapyd.log", *node.folder.glob("logs/**/*.log")]:
            text = log.read_text(errors="replace")
            assert PASSWORD not in text and POSTGRES_PASSWORD not in text, f"password in {log}"
    assert PASSWORD not in output and POSTGRES_PASSWORD not in output


def test_a_daily_limit_holds_across_nodes_and_entries_spread_over_them(
    nodes, simulator, tmp_path, backend_settings, cluster_config
):
    def limited(policy: dict[str, Any]) -> None:
        policy["engines"]["mojeek"].update(daily_limit=5, qps=4)

    settings = {
        **backend_settings,
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_CONFIG_DIR": str(cluster_config(limited)),
    }
    queries = [f"glacier retreat {n}" for n in range(12)]
    path = batch_file(tmp_path, "quota.yaml", queries, engine="mojeek", sources=["serp"])

    result = run_batch(path, nodes, settings, "--concurrency", "2")

    assert len(simulator.requests("mojeek")) == 5, "exactly the daily limit, over three nodes"
    entries, pages = read_store(settings, entries_and_pages)
    assert len(entries) == 12
    # Those left when the quota was spent stay pending for the next day: never opened, or
    # refused their next page, their query interrupted after its stored pages.
    left = [e for e in entries if e.state == "pending"]
    assert left and all(e.state == "done" for e in entries if e.state != "pending")
    statuses = read_store(settings, query_statuses)
    assert all(statuses[e.position] == "interrupted" for e in left if e.query_id is not None)
    assert re.search(
        r"of batch 1 stays? pending: mojeek refuses requests now \(its daily quota of 5 requests",
        job_logs(nodes),
    )
    assert sum(len(p) for p in pages.values()) == 5, "each page sent was stored once"
    # Every node's job ran; their entries came from the one shared store.
    scheduled = {
        line.rsplit(" on ", 1)[1].rstrip(")")
        for line in result.stdout.splitlines()
        if "running (job" in line or "finished (job" in line
    }
    assert scheduled == {node.url for node in nodes}, result.stdout + result.stderr[-2000:]
    assert_jobs_logged_no_error(nodes)


def test_a_rate_limit_holds_across_nodes(
    nodes, simulator, tmp_path, backend_settings, cluster_config
):
    def ten_qps(policy: dict[str, Any]) -> None:
        policy["engines"]["mojeek"].update(daily_limit=None, qps=10)

    settings = {
        **backend_settings,
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_CONFIG_DIR": str(cluster_config(ten_qps)),
    }
    queries = [f"sea ice {n}" for n in range(9)]
    path = batch_file(
        tmp_path,
        "rate.yaml",
        queries,
        engine="mojeek",
        sources=["serp"],
        serp_max_pages=3,
        strategy="fixed",
    )

    result = run_batch(path, nodes, settings, "--concurrency", "3")

    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert_no_password_in_logs(nodes, result.stdout + result.stderr)
    for name in ("LYRA_DB_URL", "LYRA_COORDINATION_URL"):
        withheld = f"note: {name} holds a password, so it is not sent with the jobs"
        assert (withheld in result.stdout) is ("@" in backend_settings.get(name, ""))
    times = sorted(request["time"] for request in simulator.requests("mojeek"))
    assert len(times) == 27
    closest = min(later - earlier for earlier, later in pairwise(times))
    assert closest >= 0.095, f"two requests {closest * 1000:.0f} ms apart across nodes"
    assert_jobs_logged_no_error(nodes)


def test_a_breaker_opened_on_one_node_holds_on_the_others_until_one_trial(
    nodes, start_simulator, tmp_path, backend_settings
):
    blocking = start_simulator("--captcha-at", "duckduckgo:2")
    settings = {**backend_settings, "LYRA_SIMULATOR_URL": blocking.url}
    first = batch_file(
        tmp_path,
        "captcha.yaml",
        ["tundra"],
        engine="duckduckgo",
        sources=["serp"],
        serp_max_pages=3,
        strategy="fixed",
    )
    run_batch(first, nodes[:1], settings)
    assert len(blocking.requests("duckduckgo")) == 2, "the CAPTCHA came on page 2"
    assert read_store(settings, breaker_open_until) > time.time() + 600, "open for an hour"

    # The other nodes' entries naming the engine wait for its cool-down, which the test ends
    # once a node says they do; then the first request is the one half-open trial, held by the
    # simulator: while it is out, no other request goes (the other node looks again every
    # ENTRY_POLL_S, twice in this window), and once its answer is released, the other entry's
    # request goes, whichever node runs it.
    trial = start_simulator("--hold-at", "duckduckgo:1")
    waiting = batch_file(
        tmp_path,
        "waiting.yaml",
        ["taiga", "steppe"],
        engine="duckduckgo",
        sources=["serp"],
        serp_max_pages=1,
    )
    batch = run_batch(
        waiting,
        nodes[1:],
        {**settings, "LYRA_SIMULATOR_URL": trial.url},
        "--concurrency",
        "1",
        wait=False,
    )
    wait_for_log(nodes[1:], batch, "for duckduckgo: its breaker is open until")
    reopens_at = read_store(settings, end_cooldown)
    assert trial.held("duckduckgo", 1, timeout_s=60), "no trial request came"
    second = trial.held("duckduckgo", 1, count=2, timeout_s=2 * ENTRY_POLL_S + 0.5)
    released_at = time.time()
    trial.release("duckduckgo", 1)
    stdout, stderr = batch.communicate(timeout=JOB_TIMEOUT_S + 60)

    assert not second, "a second request went out during the half-open trial"
    assert batch.returncode == 0, stdout + stderr[-3000:]
    assert "2 of 2 entries succeeded" in stdout
    assert len(blocking.requests("duckduckgo")) == 2
    times = sorted(request["time"] for request in trial.requests("duckduckgo"))
    assert len(times) == 2
    assert times[0] >= reopens_at, "a request went out while the breaker was open"
    assert times[1] >= released_at, "a second request went out during the half-open trial"
    assert_jobs_logged_no_error(nodes)


async def breaker_open_until(backends: Backends) -> float:
    health = await backends.coordinator.breaker_health("duckduckgo")
    return health.open_until or 0.0


async def end_cooldown(backends: Backends) -> float:
    """DuckDuckGo's breaker cool-down ended now, through the coordinator every node shares (as
    a failed trial with no cool-down would end it): when it ended."""
    no_cooldown = BreakerPolicy(cooldown_s={"captcha": 0.0})
    change = await backends.coordinator.breaker_failure(
        "duckduckgo", no_cooldown, kind="captcha", trial=True, retry_after_s=None
    )
    assert change.after.open_until is not None
    return change.after.open_until


def wait_for_log(nodes: list[ScrapydServer], batch: subprocess.Popen[str], text: str) -> None:
    """Until a job of `nodes` has logged `text`, the batch running all along."""
    deadline = time.monotonic() + 120
    while text not in job_logs(nodes):
        assert batch.poll() is None, f"the batch ended: {batch.communicate()}"
        assert time.monotonic() < deadline, f"no job logged {text!r}: {job_logs(nodes)}"
        time.sleep(0.2)


def test_a_node_killed_mid_batch_loses_nothing_and_stores_nothing_twice(
    nodes, simulator, tmp_path, backend_settings, cluster_config
):
    def paced(policy: dict[str, Any]) -> None:
        for engine in ("mojeek", "duckduckgo", "startpage"):
            policy["engines"][engine].update(daily_limit=None, qps=3)

    settings = {
        **backend_settings,
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_CONFIG_DIR": str(cluster_config(paced)),
    }
    engines = ("mojeek", "duckduckgo", "startpage")
    queries = [{"query": f"peatland {n}", "engine": engines[n % 3]} for n in range(12)]
    path = batch_file(
        tmp_path, "kill.yaml", queries, sources=["serp"], serp_max_pages=3, strategy="fixed"
    )

    batch = run_batch(path, nodes, settings, "--concurrency", "2", wait=False)
    victim = _running_job_pid(nodes[0], batch)
    # Killed while it runs a query of the batch (a page of it stored, more to come), so that
    # entry must be taken again by another node.
    deadline = time.monotonic() + 60
    while not read_store(settings, partly_crawled_by(victim)):
        assert time.monotonic() < deadline, "the victim's job never ran an entry"
        time.sleep(0.1)
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = batch.communicate(timeout=JOB_TIMEOUT_S + 60)

    assert batch.returncode == 0, stdout + stderr[-3000:] + job_logs(nodes)
    entries, pages = read_store(settings, entries_and_pages)
    assert [entry.state for entry in entries] == ["done"] * 12
    for position, stored in pages.items():
        numbers = [page.page_number for page in stored]
        assert sorted(numbers) == [1, 2, 3], f"entry {position}: pages {numbers}"
    taken_again = [entry for entry in entries if entry.attempts > 1]
    assert taken_again, "the killed node held entries: they were taken again"
    # ... resuming the killed crawl's queries, so no page is stored twice; only an entry on an
    # engine whose page N+1 is page N's form (DuckDuckGo, Startpage) starts a new query.
    queries = read_store(settings, stored_queries)
    assert sum(query.status == "finished" for query in queries) == 12
    config = load_config(None)
    left = [query for query in queries if query.status != "finished"]
    assert all(
        q.status == "interrupted" and config.engine(q.engine).next_page == "form" for q in left
    ), left
    assert_jobs_logged_no_error(nodes)


async def stored_queries(backends: Backends) -> list[Any]:
    store = backends.store
    return [await store.query(query_id) for query_id in await store.query_ids()]


def partly_crawled_by(pid: int) -> Callable[[Backends], Awaitable[bool]]:
    """Whether the crawl process `pid` runs a query that has stored a page but not its last."""

    async def check(backends: Backends) -> bool:
        store = backends.store
        for query_id in await store.query_ids():
            query = await store.query(query_id)
            mine = query is not None and query.pid == pid and query.status == "running"
            if mine and 0 < len(await store.pages(query_id)) < 3:
                return True
        return False

    return check


def _running_job_pid(node: ScrapydServer, batch: subprocess.Popen[str]) -> int:
    """The pid of the batch's job on `node` once it runs."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if batch.poll() is not None:
            raise AssertionError(f"the batch ended early: {batch.communicate()}")
        running = requests.get(f"{node.url}/listjobs.json", params={"project": PROJECT}).json()
        if running["running"]:
            return int(running["running"][0]["pid"])
        time.sleep(0.2)
    raise AssertionError(f"no job ran on {node.url}")
