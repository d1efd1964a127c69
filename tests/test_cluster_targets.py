"""A node that does not store and coordinate where its batch does refuses the batch's job.

Real Scrapyd nodes on loopback with the project deployed, a PostgreSQL store and a Redis
coordinator, both with a password, so that neither URL travels with a job: two nodes have both
URLs in their environment; one lacks the coordinator's (it would keep quotas of its own in a
local SQLite file); one names another Redis. The last two refuse every job before any request,
and say so in their job's log, which `scrapy batch --scrapyd` reads; `scrapy nodes` tells the
four apart before anything is spent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from scrapyd_client.pyclient import ScrapydClient

from lyra_crawl.batch.scrapyd import job_refusal, job_settings, schedule_crawl, wait_for_jobs
from tests.conftest import ROOT, edited_config, run_scrapy
from tests.scrapyd_server import ScrapydServer, deploy, running_scrapyd
from tests.servers.postgres import PostgresServer, new_database
from tests.servers.redis import PASSWORD, RedisServer, running_redis
from tests.test_cluster import (
    JOB_TIMEOUT_S,
    PROJECT,
    _empty,
    assert_jobs_logged_no_error,
    assert_no_password_in_logs,
    batch_file,
    entries_and_pages,
    job_logs,
    read_store,
    run_batch,
)

DATABASE = "lyra_targets"


@dataclass(frozen=True)
class Cluster:
    ready: list[ScrapydServer]  # both URLs in their environment
    no_coordinator: ScrapydServer  # the store's URL alone
    other_redis: ScrapydServer  # the store's URL and another Redis's

    @property
    def every_node(self) -> list[ScrapydServer]:
        return [*self.ready, self.no_coordinator, self.other_redis]


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with new_database(postgres_server, DATABASE) as url:
        yield url


@pytest.fixture(scope="module")
def other_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with running_redis(tmp_path_factory.mktemp("other-redis")) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory,
    redis_server: RedisServer,
    other_redis: RedisServer,
    database: str,
    project_egg: Path,
) -> Iterator[Cluster]:
    """Four Scrapyd nodes, the project deployed on each; their environments as a systemd unit
    would give them."""
    folder = tmp_path_factory.mktemp("targets")
    store = {"LYRA_DB_URL": database}
    environments = {
        "ready0": {**store, "LYRA_COORDINATION_URL": redis_server.url},
        "ready1": {**store, "LYRA_COORDINATION_URL": redis_server.url},
        "no_coordinator": store,
        "other_redis": {**store, "LYRA_COORDINATION_URL": other_redis.url},
    }
    with ExitStack() as stack:
        nodes = {}
        for name, environment in environments.items():
            nodes[name] = stack.enter_context(running_scrapyd(folder / name, environment))
            deploy(nodes[name], ROOT, folder / f"project-{name}", project_egg)
        yield Cluster(
            ready=[nodes["ready0"], nodes["ready1"]],
            no_coordinator=nodes["no_coordinator"],
            other_redis=nodes["other_redis"],
        )


@pytest.fixture
def shared(database: str, redis_url: str) -> dict[str, str]:
    """The run's store and coordinator, both emptied: the ones the ready nodes name."""
    _empty(database)
    return {"LYRA_DB_URL": database, "LYRA_COORDINATION_URL": redis_url}


def expected_coordinator(redis_server: RedisServer) -> str:
    return f"redis://127.0.0.1:{redis_server.port}/0"


def missing_coordinator(cluster: Cluster, redis_server: RedisServer) -> str:
    """What the node without the coordinator's URL says when it refuses a job."""
    default = (cluster.no_coordinator.folder / "data" / "lyra.sqlite3").resolve()
    return (
        f"this job coordinates through {expected_coordinator(redis_server)}, but "
        f"LYRA_COORDINATION_URL is not set on this node (its default: sqlite:///{default}): "
        "set LYRA_COORDINATION_URL in this node's Scrapyd environment, see docs/deployment.md"
    )


def another_coordinator(redis_server: RedisServer, other_redis: RedisServer) -> str:
    """What the node on another Redis says when it refuses a job."""
    return (
        f"this job coordinates through {expected_coordinator(redis_server)}, but this node's "
        f"LYRA_COORDINATION_URL names redis://:***@127.0.0.1:{other_redis.port}/0: set "
        "LYRA_COORDINATION_URL in this node's Scrapyd environment, see docs/deployment.md"
    )


def refused_job(output: str, node: ScrapydServer) -> tuple[str, str]:
    """The id of the job `scrapy batch` says `node` refused, and the reason it gives."""
    found = re.search(
        rf"^batch \d+: refused \(job (\w+) on {re.escape(node.url)}\): (.*)$", output, re.M
    )
    assert found, output
    return found.group(1), found.group(2)


def assert_refused_before_any_crawl(node: ScrapydServer, job_id: str, reason: str) -> None:
    """The job's log says why, once, and shows no crawl; the node made no file of its own."""
    log = node.job_log(PROJECT, job_id)
    assert log.count(f"ERROR: refused to start: {reason}") == 1, log[-3000:]
    assert "Spider opened" not in log and "Crawled" not in log, log[-3000:]
    assert not (node.folder / "data").exists(), "the node fell back to a SQLite file of its own"


def mojeek_limited_to(limit: int) -> Any:
    def edit(policy: dict[str, Any]) -> None:
        policy["engines"]["mojeek"].update(daily_limit=limit, qps=4)

    return edit


def test_a_node_without_the_coordinator_refuses_and_the_others_hold_the_daily_limit(
    cluster, simulator, tmp_path, shared, redis_server
):
    settings = {
        **shared,
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_CONFIG_DIR": str(edited_config(tmp_path / "config", mojeek_limited_to(5))),
    }
    queries = [f"glacier retreat {n}" for n in range(12)]
    path = batch_file(
        tmp_path, "quota.yaml", queries, engine="mojeek", sources=["serp"], serp_max_pages=1
    )
    nodes = [*cluster.ready, cluster.no_coordinator]

    result = run_batch(path, nodes, settings, "--concurrency", "2")

    output = result.stdout + result.stderr
    assert len(simulator.requests("mojeek")) == 5, "5 of 5: exactly the daily limit"
    job_id, reason = refused_job(result.stdout, cluster.no_coordinator)
    assert reason == missing_coordinator(cluster, redis_server)
    assert f"error: job {job_id} on {cluster.no_coordinator.url} refused to start: {reason}" in (
        result.stderr
    )
    assert result.returncode == 1, output[-3000:]
    assert_refused_before_any_crawl(cluster.no_coordinator, job_id, reason)
    # The other two ran the batch: the five entries the quota let run are done, the rest
    # pending for the next day, every page sent stored once, by their jobs alone.
    entries, pages = read_store(settings, entries_and_pages)
    states = [entry.state for entry in entries]
    assert (states.count("done"), states.count("pending")) == (5, 7), states
    assert sum(len(stored) for stored in pages.values()) == 5
    ran = {
        line.rsplit(" on ", 1)[1].rstrip(")")
        for line in result.stdout.splitlines()
        if "finished (job" in line
    }
    assert ran == {node.url for node in cluster.ready}, output[-3000:]
    assert job_id not in job_logs(cluster.ready)
    assert_no_password_in_logs(nodes, output)
    assert_jobs_logged_no_error(cluster.ready)


def test_a_node_on_another_redis_refuses_and_the_others_finish_the_batch(
    cluster, simulator, tmp_path, shared, redis_server, other_redis
):
    settings = {**shared, "LYRA_SIMULATOR_URL": simulator.url, "LYRA_RATE_LIMIT_ENABLED": "false"}
    queries = [f"permafrost {n}" for n in range(6)]
    path = batch_file(
        tmp_path, "six.yaml", queries, engine="mojeek", sources=["serp"], serp_max_pages=1
    )
    nodes = [*cluster.ready, cluster.other_redis]

    result = run_batch(path, nodes, settings, "--concurrency", "2")

    output = result.stdout + result.stderr
    assert "6 of 6 entries succeeded" in result.stdout, output[-3000:]
    assert len(simulator.requests("mojeek")) == 6
    job_id, reason = refused_job(result.stdout, cluster.other_redis)
    assert reason == another_coordinator(redis_server, other_redis)
    assert result.returncode == 1, "a node that refused is a failure, as a crashed crawl is"
    assert_refused_before_any_crawl(cluster.other_redis, job_id, reason)
    with redis.Redis(port=other_redis.port, password=PASSWORD) as other:
        assert other.keys("lyra:*") == [], "nothing was coordinated through the other Redis"
    with redis.Redis(port=redis_server.port, password=PASSWORD) as used:
        assert used.keys("lyra:*"), "the batch coordinated through its own Redis"
    assert_no_password_in_logs(nodes, output)
    assert_jobs_logged_no_error(cluster.ready)


def test_when_every_node_refuses_the_batch_says_so_and_leaves_its_entries_pending(
    cluster, simulator, tmp_path, shared
):
    settings = {**shared, "LYRA_SIMULATOR_URL": simulator.url}
    path = batch_file(tmp_path, "none.yaml", ["tundra", "taiga"], engine="mojeek")
    nodes = [cluster.no_coordinator, cluster.other_redis]

    result = run_batch(path, nodes, settings)

    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(
        "error: no node could run batch 1: every job refused to start (above)"
    ), result.stderr
    for node in nodes:
        refused_job(result.stdout, node)
    entries, _ = read_store(settings, entries_and_pages)
    assert [entry.state for entry in entries] == ["pending", "pending"]
    assert simulator.requests() == []
    assert_no_password_in_logs(nodes, result.stdout + result.stderr)


def test_a_single_crawl_scheduled_without_its_coordinators_url_refuses_on_a_node_without_it(
    cluster, simulator, shared, redis_server
):
    node = cluster.no_coordinator
    settings = job_settings({**shared, "LYRA_SIMULATOR_URL": simulator.url})
    assert set(settings.withheld) == {"LYRA_DB_URL", "LYRA_COORDINATION_URL"}
    args = {"query": "ice shelf", "engine": "mojeek", "sources": "serp"}

    job = schedule_crawl(ScrapydClient(node.url), PROJECT, args, settings)
    wait_for_jobs([job], PROJECT, poll_interval=0.5, timeout=JOB_TIMEOUT_S)

    reason = missing_coordinator(cluster, redis_server)
    assert job_refusal(job, PROJECT) == reason
    assert_refused_before_any_crawl(node, job.id, reason)
    assert simulator.requests() == []
    # Scrapyd logs the job's arguments: where it must coordinate, never the password.
    started = [line for line in node.log_tail(10**7).splitlines() if job.id in line]
    assert any(
        f"LYRA_EXPECT_COORDINATION={expected_coordinator(redis_server)}" in line for line in started
    )
    assert_no_password_in_logs([node], "")


def test_scrapy_nodes_lists_what_each_node_resolves_and_reaches(
    cluster, shared, database, redis_server, other_redis, postgres_server
):
    nodes = [cluster.ready[0], cluster.no_coordinator, cluster.other_redis]

    result = run_scrapy("nodes", "--scrapyd", ",".join(n.url for n in nodes), env=shared)

    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    store = (
        f"  store        postgresql://lyra:***@127.0.0.1:{postgres_server.port}/{DATABASE} "
        "(its LYRA_DB_URL): as expected, reachable"
    )
    coordinator = expected_coordinator(redis_server)
    default = (cluster.no_coordinator.folder / "data" / "lyra.sqlite3").resolve()
    lines = result.stdout.splitlines()
    for node, shown in (
        (
            cluster.ready[0],
            f"  coordinator  redis://:***@127.0.0.1:{redis_server.port}/0 "
            "(its LYRA_COORDINATION_URL): as expected, reachable",
        ),
        (
            cluster.no_coordinator,
            f"  coordinator  sqlite:///{default} (LYRA_COORDINATION_URL not set: its default): "
            f"WRONG, expected {coordinator}",
        ),
        (
            cluster.other_redis,
            f"  coordinator  redis://:***@127.0.0.1:{other_redis.port}/0 "
            f"(its LYRA_COORDINATION_URL): WRONG, expected {coordinator}",
        ),
    ):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{node.url} (host "))
        ready = "ready" if node in cluster.ready else "NOT READY"
        assert lines[at].endswith(f"): {ready}") and lines[at + 1 : at + 3] == [store, shown]
    assert result.stderr.splitlines() == [
        f"error: {cluster.no_coordinator.url}: {missing_coordinator(cluster, redis_server)}",
        f"error: {cluster.other_redis.url}: {another_coordinator(redis_server, other_redis)}",
    ]
    assert lines[-1] == "1 of 3 nodes ready"
    # The check made no file of its own on the node that lacks the coordinator.
    assert not (cluster.no_coordinator.folder / "data").exists()
    assert_no_password_in_logs(nodes, result.stdout + result.stderr)

    ready = run_scrapy("nodes", "--scrapyd", ",".join(n.url for n in cluster.ready), env=shared)

    assert ready.returncode == 0, ready.stdout + ready.stderr[-3000:]
    assert ready.stdout.splitlines()[-1] == "2 of 2 nodes ready"


def test_scrapy_nodes_says_a_node_cannot_reach_the_coordinator(cluster, shared, refused_port):
    # Without a password the URL travels with the job, and the job's settings win over the
    # node's environment: the node is where the run expects, and cannot reach it.
    settings = {**shared, "LYRA_COORDINATION_URL": f"redis://127.0.0.1:{refused_port}/0"}

    result = run_scrapy("nodes", "--scrapyd", cluster.ready[0].url, env=settings)

    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    assert (
        f"  coordinator  redis://127.0.0.1:{refused_port}/0 (its LYRA_COORDINATION_URL): "
        "UNREACHABLE"
    ) in result.stdout.splitlines()
    (error,) = result.stderr.splitlines()
    assert error.startswith(f"error: {cluster.ready[0].url}: LYRA_COORDINATION_URL redis://")
    assert "unreachable" in error
    assert result.stdout.splitlines()[-1] == "0 of 1 nodes ready"


def test_scrapy_nodes_says_which_node_it_could_not_ask(refused_port, shared):
    node = f"http://127.0.0.1:{refused_port}"

    result = run_scrapy("nodes", "--scrapyd", node, env=shared)

    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    (error,) = result.stderr.splitlines()
    assert error.startswith(f"error: {node}: Scrapyd at {node} refused to schedule node_check")
    assert result.stdout.splitlines() == ["0 of 1 nodes ready"]
