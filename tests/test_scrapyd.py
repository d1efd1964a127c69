"""The deployed egg run by a real Scrapyd on loopback, crawling the simulator into SQLite."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from scrapyd_client.pyclient import ScrapydClient

from lyra_crawl.batch.scrapyd import (
    FINISHED,
    job_settings,
    job_states,
    schedule_crawl,
    wait_for_jobs,
)
from tests.conftest import ROOT, Simulator, query_db
from tests.reliability.test_kill_and_resume import stored_pages
from tests.scrapyd_server import ScrapydServer

PROJECT = "lyra_crawl"
JOB_TIMEOUT_S = 180.0


def run_settings(simulator: Simulator, db_path: Path, **extra: str) -> dict[str, str]:
    return {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_DB_PATH": str(db_path.resolve()),
        "LYRA_RATE_LIMIT_ENABLED": "false",
        **extra,
    }


def run_jobs(scrapyd: ScrapydServer, jobs: list[tuple[dict[str, str], dict[str, str]]]) -> list:
    """Schedule (spider_args, the run's settings) pairs at once, wait for all; returns their
    job ids."""
    client = ScrapydClient(scrapyd.url)
    scheduled = [
        schedule_crawl(client, PROJECT, args, job_settings(settings)) for args, settings in jobs
    ]
    job_ids = [job.id for job in scheduled]
    states = wait_for_jobs(scheduled, PROJECT, poll_interval=0.5, timeout=JOB_TIMEOUT_S)
    logs = "\n".join(scrapyd.job_log(PROJECT, job_id)[-3000:] for job_id in job_ids)
    assert set(states.values()) == {"finished"}, f"{states}\n{logs}\n{scrapyd.log_tail()}"
    return job_ids


def test_deployed_project_lists_its_spiders(scrapyd):
    assert ScrapydClient(scrapyd.url).spiders(PROJECT) == ["node_check", "papers", "serp"]


def test_a_scheduled_job_stores_its_pages_and_finishes_its_status_row(scrapyd, simulator, tmp_path):
    db_path = tmp_path / "scrapyd.sqlite3"
    args = {
        "query": "glacier retreat",
        "engine": "mojeek",
        "serp_max_pages": "3",
        "sources": "serp",
    }

    (job_id,) = run_jobs(scrapyd, [(args, run_settings(simulator, db_path))])

    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["job_id"] == job_id, scrapyd.job_log(PROJECT, job_id)[-3000:]
    assert query["status"] == "finished"
    assert json.loads(query["stop_reason"]) == {"mojeek": "max_pages"}
    pages = query_db(db_path, "SELECT DISTINCT page_number FROM serp_items ORDER BY 1")
    assert [row["page_number"] for row in pages] == [1, 2, 3]
    assert query["items"] == 30
    assert len(simulator.requests("mojeek")) == 3


@pytest.fixture
def limited_config_dir(tmp_path: Path) -> Path:
    """The project's config with a daily limit of 3 requests on mojeek."""
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "search_parsers.yaml").write_text((ROOT / "config/search_parsers.yaml").read_text())
    policy = yaml.safe_load((ROOT / "config/engines.yaml").read_text())
    policy["engines"]["mojeek"]["daily_limit"] = 3
    (folder / "engines.yaml").write_text(yaml.safe_dump(policy))
    return folder


def test_two_jobs_at_once_share_one_daily_limit(scrapyd, simulator, tmp_path, limited_config_dir):
    db_path = tmp_path / "scrapyd.sqlite3"
    settings = run_settings(simulator, db_path, LYRA_CONFIG_DIR=str(limited_config_dir))
    jobs = [
        ({"query": query, "engine": "mojeek", "serp_max_pages": "3", "sources": "serp"}, settings)
        for query in ("permafrost thaw", "ice sheet melt")
    ]

    job_ids = run_jobs(scrapyd, jobs)

    rows = query_db(db_path, "SELECT job_id, status FROM queries ORDER BY id")
    assert sorted(row["job_id"] for row in rows) == sorted(job_ids)
    assert {row["status"] for row in rows} == {"finished"}
    assert len(simulator.requests("mojeek")) <= 3


def test_a_job_cancelled_mid_crawl_ends_cancelled_and_keeps_its_pages(
    scrapyd, start_simulator, tmp_path
):
    simulator = start_simulator("--hold-at", "mojeek:4")
    db_path = tmp_path / "scrapyd.sqlite3"
    args = {
        "query": "fjord sediment",
        "engine": "mojeek",
        "serp_max_pages": "8",
        "strategy": "fixed",
        "sources": "serp",
    }
    client = ScrapydClient(scrapyd.url)
    job = schedule_crawl(client, PROJECT, args, job_settings(run_settings(simulator, db_path)))
    deadline = time.monotonic() + JOB_TIMEOUT_S

    def until(condition: Callable[[], bool]) -> None:
        while not condition():
            running = job_states(client, PROJECT).get(job.id) != FINISHED
            assert running and time.monotonic() < deadline, scrapyd.job_log(PROJECT, job.id)[-3000:]
            time.sleep(0.1)

    until(lambda: stored_pages(db_path) >= 3 and simulator.held("mojeek", 4, timeout_s=1))
    # Scrapyd's cancel sends SIGINT (its default `signal`); Scrapy then closes gracefully, and
    # page 4, in flight, is answered once the job has heard it.
    assert client.cancel(PROJECT, job.id)["prevstate"] == "running"
    until(lambda: "Received SIGINT" in scrapyd.job_log(PROJECT, job.id))
    simulator.release("mojeek", 4)
    states = wait_for_jobs([job], PROJECT, poll_interval=0.5, timeout=JOB_TIMEOUT_S)

    log = scrapyd.job_log(PROJECT, job.id)
    assert states == {job.id: FINISHED}, log[-3000:]
    assert "Received SIGINT" in log and " ERROR: " not in log, log[-3000:]
    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert (query["job_id"], query["status"]) == (job.id, "cancelled")
    assert json.loads(query["stop_reason"]) == {"mojeek": "cancelled"}
    pages = [row[0] for row in query_db(db_path, "SELECT page_number FROM serp_pages ORDER BY 1")]
    # The page in flight when the cancel came is fetched and stored; nothing after it.
    assert pages == [1, 2, 3, 4], pages
    assert query["items"] == 10 * len(pages)
