"""Engines that cannot be reached: a query that fetched nothing because every source failed is
said once with the fix, fails its batch entry and makes the crawl exit 1; a query with one source
failing and another answering is no failure."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import query_db, run_scrapy, scrapy_env

# One retry, so that the refused requests give up quickly.
FAST_FAILING = ("-s", "RETRY_TIMES=1")
FAILED = re.compile(r"query (\d+) failed: every source failed \((.*)\); nothing was stored")


def unreachable_env(simulator, db_path: Path, port: int) -> dict[str, str]:
    return scrapy_env(simulator, db_path) | {"LYRA_SIMULATOR_URL": f"http://127.0.0.1:{port}"}


def crawl(sources: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """One query on mojeek (2 pages) and `sources`."""
    return run_scrapy(
        *("crawl", "serp", "-a", "query=peat carbon flux", "-a", "engine=mojeek"),
        *("-a", "serp_max_pages=2", "-a", "strategy=fixed", "-a", f"sources={sources}"),
        *FAST_FAILING,
        env=env,
    )


@pytest.mark.e2e
def test_a_query_whose_every_source_is_unreachable_fails_once_with_the_fix_and_exit_1(
    simulator, db_path, refused_port
):
    result = crawl("serp,openalex", unreachable_env(simulator, db_path, refused_port))

    assert result.returncode == 1, result.stderr[-3000:]
    (failure,) = FAILED.findall(result.stderr)
    assert failure[0] == "1"
    assert "mojeek: Connection was refused" in failure[1]
    assert "openalex: Connection was refused" in failure[1]
    assert "check that the engines can be reached from here" in result.stderr
    assert "mojeek page 1 could not be fetched" in result.stderr
    assert "; no page kept" in result.stderr
    (row,) = query_db(db_path, "SELECT * FROM queries")
    assert row["status"] == "finished" and row["pages_fetched"] == row["items"] == 0
    assert json.loads(row["stop_reason"]) == {"mojeek": "error", "openalex": "error"}
    assert set(json.loads(row["errors"])) == {"mojeek", "openalex"}


@pytest.mark.e2e
def test_one_source_failing_beside_one_that_answers_is_no_failed_query(start_simulator, db_path):
    simulator = start_simulator("--status-at", "openalex:1:500")
    result = crawl("serp,openalex", scrapy_env(simulator, db_path))

    assert result.returncode == 0, result.stderr[-3000:]
    assert not FAILED.findall(result.stderr)
    (row,) = query_db(db_path, "SELECT * FROM queries")
    assert json.loads(row["stop_reason"]) == {"mojeek": "max_pages", "openalex": "error"}
    assert row["items"] > 0


@pytest.mark.e2e
def test_error_answers_from_every_source_fail_the_query_too(start_simulator, db_path):
    simulator = start_simulator("--status-at", "mojeek:1:500")
    result = crawl("serp", scrapy_env(simulator, db_path))

    assert result.returncode == 1, result.stderr[-3000:]
    (failure,) = FAILED.findall(result.stderr)
    assert failure[1].startswith("mojeek: ")


@pytest.mark.e2e
def test_batch_entries_whose_sources_are_unreachable_fail_with_why_and_the_batch_exits_1(
    simulator, db_path, refused_port, tmp_path
):
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {engine: mojeek, serp_max_pages: 1, strategy: fixed, sources: [serp]}\n"
        "queries: [peat carbon flux, bog methane]\n"
    )

    result = run_scrapy(
        "batch",
        str(batch_file),
        *FAST_FAILING,
        env=unreachable_env(simulator, db_path, refused_port),
    )

    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    entries = query_db(db_path, "SELECT * FROM batch_entries ORDER BY position")
    assert [entry["state"] for entry in entries] == ["failed", "failed"]
    # The second may find mojeek's breaker open after the first's failures: no block either.
    for entry in entries:
        assert entry["detail"].startswith("every source failed (mojeek: "), entry["detail"]
        assert (
            "Connection was refused" in entry["detail"]
            or "mojeek's breaker is open until" in entry["detail"]
        ), entry["detail"]
    assert "0 of 2 entries succeeded" in result.stdout
    assert "'bog methane': failed (query 2): every source failed (mojeek:" in result.stdout
