"""Batches at scale, end to end: killed and continued, engines outside their hours, the
last-mile share of a task, and a 10,000-entry file recorded and queued."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lyra_crawl.batch.files import (
    CACHED,
    SUMMARY_ENTRIES,
    BatchEnd,
    entry_specs,
    parse_batch,
    summary_lines,
)
from lyra_crawl.commands.batch import batch_end
from lyra_crawl.config import LyraConfig, load_config
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.records import BatchEntry, EntrySpec, PageRecord, QueryRecord
from tests.conftest import (
    Lines,
    edited_config,
    query_db,
    run_scrapy,
    scrapy_env,
    start_scrapy,
    with_store,
)
from tests.reliability.test_kill_and_resume import (
    assert_whole_pages,
    signal_while_held,
    stored_pages,
    wait_for_pages,
    wait_until_held,
)


def four_page_batch(folder: Path, topic: str, count: int) -> Path:
    """A batch file of `count` queries `topic N`, four pages each on mojeek."""
    batch_file = folder / "batch.yaml"
    batch_file.write_text(
        "defaults: {engine: mojeek, serp_max_pages: 4, strategy: fixed, sources: [serp]}\n"
        "queries: [" + ", ".join(f"'{topic} {n}'" for n in range(count)) + "]\n"
    )
    return batch_file


@pytest.mark.e2e
def test_a_killed_batch_run_again_does_every_entry_once_and_stores_each_page_once(
    start_simulator, tmp_path
):
    db_path = tmp_path / "lyra.sqlite3"
    simulator = start_simulator("--hold-at", "mojeek:3")
    batch_file = four_page_batch(tmp_path, "estuary", 6)
    env = scrapy_env(simulator, db_path)

    first = start_scrapy("batch", str(batch_file), "--concurrency", "2", env=env)
    # Killed while its two entries wait for their page 3, their pages 1 and 2 stored: one
    # page 3 held, the other queued behind it (a crawl sends one request at a time to an
    # engine, so a second held request would come only once the first timed out).
    wait_for_pages(first, db_path, 4)
    wait_until_held(first, simulator, "mojeek", 3)
    first.kill()
    first.communicate(timeout=60)
    states = [r["state"] for r in query_db(db_path, "SELECT state FROM batch_entries")]
    assert "pending" in states and "running" in states, states

    simulator.release("mojeek", 3)
    again = run_scrapy("batch", str(batch_file), "--concurrency", "2", env=env)

    assert again.returncode == 0, again.stderr[-3000:]
    assert "continuing batch 1" in again.stdout
    assert "6 of 6 entries succeeded" in again.stdout
    assert_whole_pages(db_path)
    entries = query_db(db_path, "SELECT state, query_id, attempts FROM batch_entries")
    assert all(e["state"] == "done" for e in entries)
    queries = query_db(db_path, "SELECT id, query_text, status FROM queries ORDER BY id")
    assert sorted(q["query_text"] for q in queries) == [f"estuary {n}" for n in range(6)]
    assert {e["query_id"] for e in entries} == {q["id"] for q in queries}
    assert all(q["status"] == "finished" for q in queries)
    pages = query_db(
        db_path, "SELECT query_id, page_number FROM serp_pages ORDER BY query_id, page_number"
    )
    assert [(p["query_id"], p["page_number"]) for p in pages] == [
        (q["id"], n) for q in queries for n in (1, 2, 3, 4)
    ]
    assert any(e["attempts"] == 2 for e in entries), "entries the kill interrupted ran again"


@pytest.mark.e2e
def test_a_batch_sent_sigterm_puts_its_running_entries_back_and_resume_id_goes_on_with_them(
    start_simulator, tmp_path
):
    db_path = tmp_path / "lyra.sqlite3"
    simulator = start_simulator("--hold-at", "mojeek:3")
    batch_file = four_page_batch(tmp_path, "lagoon", 4)
    env = scrapy_env(simulator, db_path)
    first = start_scrapy("batch", str(batch_file), "--concurrency", "2", env=env)
    # Both running entries' pages 1 and 2 stored, one page 3 held and the other behind it.
    wait_for_pages(first, db_path, 4)
    wait_until_held(first, simulator, "mojeek", 3)

    stderr = signal_while_held(first, signal.SIGTERM, simulator, "mojeek", 3)

    assert "Received SIGTERM" in stderr and " ERROR: " not in stderr, stderr[-3000:]
    entries = query_db(
        db_path, "SELECT position, state, query_id FROM batch_entries ORDER BY position"
    )
    # The two running entries are back to pending with their cancelled query; the other two
    # never started.
    assert [(e["state"], e["query_id"] is not None) for e in entries] == [
        ("pending", True),
        ("pending", True),
        ("pending", False),
        ("pending", False),
    ]
    cancelled = query_db(db_path, "SELECT id, status, stop_reason FROM queries ORDER BY id")
    assert [(q["status"], json.loads(q["stop_reason"])) for q in cancelled] == [
        ("cancelled", {"mojeek": "cancelled"})
    ] * 2
    kept = stored_pages(db_path)
    assert kept >= 4

    # Resumed by its id: the file is not read again.
    batch_file.unlink()
    again = run_scrapy("batch", "--resume", "1", "--concurrency", "2", env=env)

    assert again.returncode == 0, again.stderr[-3000:]
    assert " ERROR: " not in again.stderr, again.stderr[-3000:]
    assert f"continuing batch 1 of {batch_file}" in again.stdout
    assert "4 of 4 entries succeeded" in again.stdout
    assert_whole_pages(db_path)
    queries = query_db(db_path, "SELECT id, status FROM queries ORDER BY id")
    # The cancelled queries went on under their own ids: one query per entry.
    assert [q["id"] for q in queries[:2]] == [q["id"] for q in cancelled]
    assert [q["status"] for q in queries] == ["finished"] * 4
    pages = query_db(db_path, "SELECT query_id, page_number FROM serp_pages ORDER BY 1, 2")
    assert [(p["query_id"], p["page_number"]) for p in pages] == [
        (q["id"], n) for q in queries for n in (1, 2, 3, 4)
    ]
    # Only the pages not stored before the signal were asked again.
    asked = len(simulator.requests("mojeek"))
    assert asked <= 16 + 2

    # A batch with nothing left to run is only summed up.
    over = run_scrapy("batch", "--resume", "1", env=env)
    assert over.returncode == 0, over.stderr[-3000:]
    assert " ERROR: " not in over.stderr, over.stderr[-3000:]
    assert f"batch 1 of {batch_file} has no entry left to run" in over.stdout
    assert "4 of 4 entries succeeded" in over.stdout
    assert len(simulator.requests("mojeek")) == asked


@pytest.mark.e2e
def test_a_closespider_limit_ends_a_batch_crawl_without_error_and_resume_finishes_it(
    simulator, tmp_path
):
    # The launch was reading the store for the next entries when the limit closed the crawl
    # and its backends: "Error while reading start items and requests: database … is closed".
    db_path = tmp_path / "lyra.sqlite3"
    batch_file = four_page_batch(tmp_path, "shoal", 12)
    env = scrapy_env(simulator, db_path)

    stopped = run_scrapy("batch", str(batch_file), "-s", "CLOSESPIDER_ITEMCOUNT=50", env=env)

    assert stopped.returncode == 1, stopped.stderr[-3000:]  # entries are left pending
    assert "closespider_itemcount" in stopped.stderr
    assert " ERROR: " not in stopped.stderr, stopped.stderr[-3000:]
    assert "Traceback" not in stopped.stderr, stopped.stderr[-3000:]
    # The running entries went back to pending, their queries cancelled: none left running.
    states = {r["state"] for r in query_db(db_path, "SELECT state FROM batch_entries")}
    statuses = {r["status"] for r in query_db(db_path, "SELECT status FROM queries")}
    assert states <= {"done", "pending"} and "pending" in states, states
    assert statuses <= {"finished", "cancelled"} and "cancelled" in statuses, statuses
    again = run_scrapy("batch", "--resume", "1", env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert " ERROR: " not in again.stderr, again.stderr[-3000:]
    assert "12 of 12 entries succeeded" in again.stdout
    assert_whole_pages(db_path)


@pytest.mark.subprocess
def test_resuming_a_batch_the_store_does_not_have_is_one_error(tmp_path):
    env = {"LYRA_DB_PATH": str(tmp_path / "lyra.sqlite3")}
    missing = run_scrapy("batch", "--resume", "7", env=env)
    assert missing.returncode == 2
    assert (
        missing.stderr.strip().splitlines()[-1].startswith("error: batch 7 is not in sqlite:///")
    ), missing.stderr[-2000:]
    both = run_scrapy("batch", str(tmp_path / "b.yaml"), "--resume", "7", env=env)
    assert both.returncode == 2 and "give a batch file or --resume ID, not both" in both.stderr


@pytest.mark.e2e
def test_an_engine_outside_its_hours_is_refused_and_its_entries_go_elsewhere(simulator, tmp_path):
    now = datetime.now(UTC)
    later = f"{(now + timedelta(hours=2)):%H}:00-{(now + timedelta(hours=3)):%H}:00"

    def edit(policy) -> None:
        for name, engine in policy["engines"].items():
            engine["weight"] = 1.0 if name in ("mojeek", "duckduckgo") else 0.0
        policy["engines"]["mojeek"]["allowed_hours"] = [later]

    db_path = tmp_path / "lyra.sqlite3"
    env = {
        **scrapy_env(simulator, db_path),
        "LYRA_CONFIG_DIR": str(edited_config(tmp_path / "config", edit)),
    }
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {serp_max_pages: 1, sources: [serp]}\n"
        "queries: [lagoon 1, lagoon 2, lagoon 3, lagoon 4, {query: lagoon 5, engine: mojeek}]\n"
    )

    result = run_scrapy("batch", str(batch_file), env=env)

    # The entry naming mojeek waits for its hours, pending: the batch is not done.
    assert result.returncode == 1, result.stderr[-3000:]
    assert "4 of 5 entries succeeded" in result.stdout
    assert "entry 5 'lagoon 5': not run" in result.stdout
    rows = query_db(db_path, "SELECT query_text, engine, selection, stop_reason FROM queries")
    chosen = {r["query_text"]: r for r in rows}
    assert sorted(chosen) == [f"lagoon {n}" for n in range(1, 5)]
    for n in range(1, 5):
        row = chosen[f"lagoon {n}"]
        assert row["engine"] == "duckduckgo"
        assert "outside allowed hours: mojeek" in json.loads(row["selection"])["reason"]
    assert (
        "1 entry of batch 1 stays pending: mojeek refuses requests now (it takes requests only "
        f"in {later} UTC); run the batch again then"
    ) in result.stderr
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert simulator.requests("mojeek") == []


def mojeek_breaker_opened(db_path: Path, config: LyraConfig) -> None:
    """mojeek's breaker opened on a CAPTCHA in the store at `db_path`, for an hour: until the
    test ends its cool-down (`batch_until_waiting`)."""

    async def open_breaker(backends) -> None:
        await backends.coordinator.breaker_failure(
            "mojeek", config.breaker, kind="captcha", trial=False, retry_after_s=3600
        )

    with_store(db_path, open_breaker)


def batch_until_waiting(
    db_path: Path, batch_file: Path, env: dict[str, str], waiting: str
) -> tuple[int, str, str, float]:
    """`scrapy batch BATCH_FILE`, mojeek's cool-down ended once the batch says `waiting` (the
    crawl looks again every ENTRY_POLL_S): its exit status, stdout and stderr, and the moment
    the cool-down ended."""
    batch = start_scrapy("batch", str(batch_file), env=env, stdout=True)
    out, said = Lines(batch.stdout), Lines(batch.stderr)
    said.wait_for(waiting)
    ended_at = time.time()
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE engine_health SET open_until = ? WHERE engine = 'mojeek'", (ended_at,))
    conn.close()
    batch.wait(timeout=300)
    return batch.returncode, out.text(), said.text(), ended_at


def two_mojeek_queries(folder: Path) -> Path:
    """Two two-page queries on mojeek, 'marsh 1' and 'marsh 3'."""
    batch_file = folder / "batch.yaml"
    batch_file.write_text(
        "defaults: {engine: mojeek, serp_max_pages: 2, strategy: fixed, sources: [serp]}\n"
        "queries: [marsh 1, marsh 3]\n"
    )
    return batch_file


def assert_both_finished_whole(db_path: Path) -> None:
    assert [(q["status"], q["pages_fetched"]) for q in mojeek_queries(db_path)] == [
        ("finished", 2),
        ("finished", 2),
    ]


def named_engine_batch(folder: Path) -> Path:
    """Four two-page queries, the first and third naming mojeek."""
    batch_file = folder / "batch.yaml"
    batch_file.write_text(
        "defaults: {serp_max_pages: 2, strategy: fixed, sources: [serp]}\n"
        "queries: [{query: marsh 1, engine: mojeek}, marsh 2,"
        " {query: marsh 3, engine: mojeek}, marsh 4]\n"
    )
    return batch_file


def mojeek_queries(db_path: Path) -> list[dict[str, Any]]:
    return [
        dict(row)
        for row in query_db(
            db_path,
            "SELECT query_text, status, pages_fetched, stop_reason FROM queries"
            " WHERE engine = 'mojeek' AND query_text IN ('marsh 1', 'marsh 3') ORDER BY id",
        )
    ]


@pytest.mark.e2e
def test_entries_naming_an_engine_whose_breaker_is_open_wait_for_its_cool_down(simulator, tmp_path):
    db_path = tmp_path / "lyra.sqlite3"
    mojeek_breaker_opened(db_path, load_config())

    status, stdout, stderr, open_until = batch_until_waiting(
        db_path,
        named_engine_batch(tmp_path),
        scrapy_env(simulator, db_path),
        "2 entries of batch 1 wait for mojeek: its breaker is open until ",
    )

    assert status == 0, stderr[-3000:]
    assert "4 of 4 entries succeeded" in stdout
    assert " ERROR: " not in stderr, stderr[-3000:]
    # Each crawled whole once the cool-down was over (the first request the one trial).
    assert [
        (q["query_text"], q["status"], q["pages_fetched"]) for q in mojeek_queries(db_path)
    ] == [
        ("marsh 1", "finished", 2),
        ("marsh 3", "finished", 2),
    ]
    times = [request["time"] for request in simulator.requests("mojeek")]
    assert len(times) == 4 and min(times) >= open_until


@pytest.mark.e2e
def test_entries_without_engine_wait_while_every_engine_they_may_go_to_refuses(simulator, tmp_path):
    """mojeek the one engine the frontier may choose, its breaker open: the entries without
    engine wait for it instead of failing with no engine available."""
    db_path = tmp_path / "lyra.sqlite3"

    def mojeek_alone(policy: dict[str, Any]) -> None:
        for name, engine in policy["engines"].items():
            engine["weight"] = 1.0 if name == "mojeek" else 0.0

    config_dir = edited_config(tmp_path / "config", mojeek_alone)
    mojeek_breaker_opened(db_path, load_config(config_dir))
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {serp_max_pages: 1, strategy: fixed, sources: [serp]}\n"
        "queries: [moor 1, moor 2]\n"
    )
    env = {**scrapy_env(simulator, db_path), "LYRA_CONFIG_DIR": str(config_dir)}

    status, stdout, stderr, open_until = batch_until_waiting(
        db_path,
        batch_file,
        env,
        "2 entries of batch 1 wait for an engine: every engine the frontier may give them "
        "refuses requests now (mojeek: its breaker is open until ",
    )

    assert status == 0, stderr[-3000:]
    assert "2 of 2 entries succeeded" in stdout
    assert " ERROR: " not in stderr, stderr[-3000:]
    times = [request["time"] for request in simulator.requests("mojeek")]
    assert len(times) == 2 and min(times) >= open_until


@pytest.mark.e2e
def test_entries_naming_an_engine_whose_quota_is_spent_stay_pending_until_run_again(
    simulator, tmp_path
):
    db_path = tmp_path / "lyra.sqlite3"

    def limit(daily_limit: int):
        def edit(policy) -> None:
            policy["engines"]["mojeek"]["daily_limit"] = daily_limit

        return edited_config(tmp_path / f"config-{daily_limit}", edit)

    async def spend(backends) -> None:
        for _ in range(2):
            assert await backends.coordinator.reserve_quota("mojeek", utc_date(), 2)

    with_store(db_path, spend)
    batch_file = named_engine_batch(tmp_path)
    env = scrapy_env(simulator, db_path)

    first = run_scrapy("batch", str(batch_file), env={**env, "LYRA_CONFIG_DIR": str(limit(2))})

    assert first.returncode == 1, first.stderr[-3000:]
    assert "2 of 4 entries succeeded" in first.stdout
    assert "entry 1 'marsh 1': not run" in first.stdout
    assert (
        "2 entries of batch 1 stay pending: mojeek refuses requests now (its daily quota of 2 "
        "requests is spent until midnight UTC); run the batch again then"
    ) in first.stderr
    assert " ERROR: " not in first.stderr, first.stderr[-3000:]
    assert simulator.requests("mojeek") == [] and mojeek_queries(db_path) == []

    again = run_scrapy("batch", str(batch_file), env={**env, "LYRA_CONFIG_DIR": str(limit(10))})

    assert again.returncode == 0, again.stderr[-3000:]
    assert "continuing batch 1" in again.stdout
    assert "4 of 4 entries succeeded" in again.stdout
    assert [q["pages_fetched"] for q in mojeek_queries(db_path)] == [2, 2]
    assert len(simulator.requests("mojeek")) == 4


@pytest.mark.e2e
def test_an_entry_whose_engine_refuses_its_next_page_goes_back_to_pending_and_resumes(
    simulator, tmp_path
):
    """Two queries of two pages on mojeek, whose daily limit of 3 is spent by them: the one
    refused its next page is not finished short but left pending, and the batch run again with
    room resumes it after its stored page."""
    db_path = tmp_path / "lyra.sqlite3"
    batch_file = two_mojeek_queries(tmp_path)
    env = scrapy_env(simulator, db_path)

    def limit(daily_limit: int) -> dict[str, str]:
        def edit(policy) -> None:
            policy["engines"]["mojeek"]["daily_limit"] = daily_limit

        return {**env, "LYRA_CONFIG_DIR": str(edited_config(tmp_path / f"c{daily_limit}", edit))}

    first = run_scrapy("batch", str(batch_file), env=limit(3))

    assert first.returncode == 1, first.stderr[-3000:]
    assert "1 of 2 entries succeeded" in first.stdout
    assert (
        "1 entry of batch 1 stays pending: mojeek refuses requests now (its daily quota of 3 "
        "requests is spent until midnight UTC); run the batch again then"
    ) in first.stderr
    assert " ERROR: " not in first.stderr, first.stderr[-3000:]
    queries = mojeek_queries(db_path)
    assert sorted((q["status"], q["pages_fetched"]) for q in queries) == [
        ("finished", 2),
        ("interrupted", 1),
    ]
    assert len(simulator.requests("mojeek")) == 3

    again = run_scrapy("batch", str(batch_file), env=limit(10))

    assert again.returncode == 0, again.stderr[-3000:]
    assert "continuing batch 1" in again.stdout
    assert "2 of 2 entries succeeded" in again.stdout
    assert " ERROR: " not in again.stderr, again.stderr[-3000:]
    assert_both_finished_whole(db_path)
    # The refused page alone was asked for again; each page was stored once.
    requests = simulator.requests("mojeek")
    assert len(requests) == 4
    assert len({json.dumps(r["params"], sort_keys=True) for r in requests}) == 4
    assert (
        query_db(
            db_path,
            "SELECT query_id, page_number, COUNT(*) FROM serp_pages GROUP BY query_id, page_number"
            " HAVING COUNT(*) > 1",
        )
        == []
    )


@pytest.mark.e2e
def test_an_entry_refused_by_a_breaker_another_query_opened_waits_for_its_cool_down(
    start_simulator, tmp_path
):
    """Two queries of two pages on mojeek, whose page 2 is a block page: the query that meets it
    opens the breaker (2 s), and the other, refused its page 2, waits for the cool-down pending,
    then asks for its page 2 as the half-open trial instead of ending with its page 1."""
    simulator = start_simulator("--captcha-at", "mojeek:2")
    db_path = tmp_path / "lyra.sqlite3"
    batch_file = two_mojeek_queries(tmp_path)

    def short_cool_down(policy: dict[str, Any]) -> None:
        policy["breaker"]["cooldown_s"] = dict.fromkeys(policy["breaker"]["cooldown_s"], 2)
        policy["engines"]["mojeek"]["qps"] = 10  # one request at a time: one meets the block

    env = {
        **scrapy_env(simulator, db_path),
        "LYRA_CONFIG_DIR": str(edited_config(tmp_path / "config", short_cool_down)),
        "LYRA_RATE_LIMIT_ENABLED": "true",
    }

    result = run_scrapy("batch", str(batch_file), env=env)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "2 of 2 entries succeeded" in result.stdout
    assert "1 entry of batch 1 waits for mojeek: its breaker is open until " in result.stderr
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert_both_finished_whole(db_path)
    requests = simulator.requests("mojeek")
    second_pages = [r for r in requests if r["params"].get("s")]
    assert len(requests) == 4 and len(second_pages) == 2
    assert {r["params"]["q"] for r in second_pages} == {"marsh 1", "marsh 3"}
    assert second_pages[1]["time"] - second_pages[0]["time"] >= 2.0


@pytest.mark.e2e
def test_an_entry_without_engine_refused_its_first_page_runs_again_on_another_engine(
    start_simulator, tmp_path
):
    """mojeek and duckduckgo the only engines to choose from; 'fen 3' goes to mojeek behind
    'fen 2' (duckduckgo is busy with 'fen 1'), whose first page is a block page: the breaker
    refuses 'fen 3' its first page, and its entry, which named no engine, is opened again as a
    new query on duckduckgo instead of ending with no page."""
    simulator = start_simulator("--captcha-at", "mojeek:1")
    db_path = tmp_path / "lyra.sqlite3"
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {serp_max_pages: 1, strategy: fixed, sources: [serp]}\n"
        "queries: [{query: fen 1, engine: duckduckgo, serp_max_pages: 4}, fen 2, fen 3]\n"
    )

    def two_engines(policy: dict[str, Any]) -> None:
        for name, engine in policy["engines"].items():
            engine["weight"] = 1.0 if name in ("mojeek", "duckduckgo") else 0.0
        policy["engines"]["mojeek"]["qps"] = 10
        policy["engines"]["duckduckgo"]["qps"] = 1

    env = {
        **scrapy_env(simulator, db_path),
        "LYRA_CONFIG_DIR": str(edited_config(tmp_path / "config", two_engines)),
    }

    result = run_scrapy("batch", str(batch_file), "--concurrency", "3", env=env)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "3 of 3 entries succeeded" in result.stdout
    assert "query 3 got no page: mojeek refuses requests now (its breaker is open" in result.stderr
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert len(simulator.requests("mojeek")) == 1
    queries = query_db(
        db_path,
        "SELECT q.query_text, q.engine, q.pages_fetched, q.stop_reason, e.query_id = q.id AS linked"
        " FROM queries AS q JOIN batch_entries AS e ON e.id = q.batch_entry_id ORDER BY q.id",
    )
    assert [tuple(row) for row in queries] == [
        ("fen 1", "duckduckgo", 4, '{"duckduckgo": "max_pages"}', 1),
        ("fen 2", "mojeek", 1, '{"mojeek": "blocked"}', 1),
        ("fen 3", "mojeek", 0, '{"mojeek": "blocked"}', 0),
        ("fen 3", "duckduckgo", 1, '{"duckduckgo": "max_pages"}', 1),
    ]


@pytest.mark.e2e
def test_with_quotas_off_entries_naming_an_engine_whose_quota_is_spent_run(simulator, tmp_path):
    db_path = tmp_path / "lyra.sqlite3"
    config = edited_config(
        tmp_path / "config", lambda policy: policy["engines"]["mojeek"].update(daily_limit=1)
    )

    async def spend(backends) -> None:
        assert await backends.coordinator.reserve_quota("mojeek", utc_date(), 1)

    with_store(db_path, spend)
    env = {
        **scrapy_env(simulator, db_path),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_QUOTA_ENABLED": "false",
    }

    result = run_scrapy("batch", str(named_engine_batch(tmp_path)), env=env)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "4 of 4 entries succeeded" in result.stdout
    assert "stay pending" not in result.stderr
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert len(simulator.requests("mojeek")) == 4


@pytest.mark.e2e
def test_a_task_with_harvest_one_sends_at_most_its_share_last_mile(simulator, tmp_path):
    db_path = tmp_path / "lyra.sqlite3"

    async def earlier(backends) -> None:
        query_id = await backends.store.start_query(
            QueryRecord("earlier", "earlier", "mojeek", 1, 1, "auto", task_id="dunes")
        )
        await backends.store.finish_query(
            query_id,
            status="finished",
            stop_reasons={"mojeek": "quota"},
            errors={},
            relevance_threshold=None,
        )

    with_store(db_path, earlier)
    # Only the task's harvest rate matters here: the earlier query's row says 1.0.
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE queries SET harvest_rate = 1.0")
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {task_id: dunes, serp_max_pages: 1, sources: [serp]}\n"
        "queries: [" + ", ".join(f"'dune {n}'" for n in range(40)) + "]\n"
    )
    env = {**scrapy_env(simulator, db_path), "LYRA_BROWSER_ENABLED": "false"}

    result = run_scrapy("batch", str(batch_file), "--concurrency", "4", env=env)

    assert result.returncode == 0, result.stderr[-3000:]
    rows = query_db(db_path, "SELECT engine, selection FROM queries WHERE query_text != 'earlier'")
    lastmile_order = load_config().lastmile.order
    went = [r for r in rows if r["engine"] in lastmile_order]
    assert 1 <= len(went) <= 0.1 * 41 + 1, [r["engine"] for r in rows]
    capped = [json.loads(r["selection"])["reason"] for r in rows if r not in went]
    assert all("lastmile.max_share 0.1" in reason for reason in capped)


def test_a_ten_thousand_entry_file_is_recorded_and_queued_in_order(tmp_path):
    text = "defaults: {engine: mojeek}\nqueries:\n" + "".join(
        f"  - query {n}\n" for n in range(10_000)
    )
    batch = parse_batch(text, load_config(), filename="big.yaml")

    async def record_and_take(backends):
        store = backends.store
        record = await store.create_batch(
            source="big.yaml", content_hash=batch.content_hash, entries=entry_specs(batch)
        )
        first = await store.take_entries(record.id, 25, owner="here:1", lease_s=60)
        second = await store.take_entries(record.id, 25, owner="here:1", lease_s=60)
        return record, first, second

    record, first, second = with_store(tmp_path / "lyra.sqlite3", record_and_take)

    assert record.entries == 10_000
    assert [e.position for e in first + second] == list(range(1, 51))
    assert first[0].arguments == {"engine": "mojeek", "query": "query 0"}
    counts = query_db(
        tmp_path / "lyra.sqlite3", "SELECT state, COUNT(*) AS n FROM batch_entries GROUP BY state"
    )
    assert {c["state"]: c["n"] for c in counts} == {"pending": 9_950, "running": 50}


def test_a_large_batch_ends_with_its_counts_and_the_entries_that_did_not_succeed():
    states = {7: ("failed", "query 7 failed"), 12: ("rejected", "bad"), 30: ("running", "")}

    def entry(n: int) -> BatchEntry:
        state, detail = states.get(n, ("done", "cached" if n % 1000 == 0 else ""))
        return BatchEntry(n, 3, n, f"query {n}", {}, state, detail=detail)

    entries = [entry(n) for n in range(10_000, 0, -1)]
    small = summary_lines(
        BatchEnd.of(sorted(entries, key=lambda e: e.position)[:SUMMARY_ENTRIES]), 3
    )
    assert [line.split(":")[0] for line in small[:-1]] == [
        f"entry {n} 'query {n}'" for n in range(1, SUMMARY_ENTRIES + 1)
    ]
    assert small[-1] == f"{SUMMARY_ENTRIES - 2} of {SUMMARY_ENTRIES} entries succeeded"

    lines = summary_lines(BatchEnd.of(entries), 3)
    assert lines == [
        "9987 finished, 10 cached, 1 failed, 1 rejected, 1 not run",
        "entry 7 'query 7': failed (no query): query 7 failed",
        "entry 12 'query 12': rejected (no query): bad",
        "entry 30 'query 30': not run (no query)",
        "9997 of 10000 entries succeeded",
    ]
    failing = [BatchEntry(n, 3, n, f"q{n}", {}, "failed") for n in range(1, 101)]
    lines = summary_lines(BatchEnd.of(failing), 3)
    assert len(lines) == 1 + SUMMARY_ENTRIES + 2
    assert (
        lines[-2] == f"… and {100 - SUMMARY_ENTRIES} more that did not succeed"
        " (each entry's state and why: table batch_entries, batch_id 3)"
    )


def test_a_large_batch_s_end_is_counted_by_the_store_as_its_entries_would_say(tmp_path):
    """`scrapy batch` reads a large batch's end from the store's counts and its first
    unsuccessful entries, not from every entry: the summary is the one all entries give."""
    specs = [
        EntrySpec(n, f"query {n}", {"query": f"query {n}"}, rejected="bad" if n == 4 else "")
        for n in range(1, SUMMARY_ENTRIES + 6)
    ]

    async def ended(backends):
        store = backends.store
        record = await store.create_batch(source="b.yaml", content_hash="h", entries=specs)
        earlier = await store.start_query(_query("earlier"))
        taken = await store.take_entries(record.id, len(specs), owner="here:1", lease_s=60)
        for entry in taken:
            if entry.position == 2:
                await store.finish_entry(entry.id, state="done", query_id=earlier, detail=CACHED)
            elif entry.position == 7:
                await store.finish_entry(
                    entry.id, state="failed", query_id=None, detail="query 7 failed"
                )
            elif entry.position != 9:  # left running
                own = await store.start_query(_query(entry.query_text, entry.id))
                await store.finish_entry(entry.id, state="done", query_id=own)
        return await batch_end(store, record.id), await store.batch_entries(record.id)

    end, entries = with_store(tmp_path / "lyra.sqlite3", ended)

    lines = summary_lines(end, 3)
    assert lines == summary_lines(BatchEnd.of(entries), 3)
    assert lines == [
        f"{len(specs) - 4} finished, 1 cached, 1 failed, 1 rejected, 1 not run",
        "entry 4 'query 4': rejected (no query): bad",
        "entry 7 'query 7': failed (no query): query 7 failed",
        "entry 9 'query 9': not run (no query)",
        f"{len(specs) - 3} of {len(specs)} entries succeeded",
    ]
    assert len(end.listed) == 3 and not end.all_succeeded


def _query(text: str, entry_id: int | None = None) -> QueryRecord:
    return QueryRecord(text, text, "mojeek", 1, 1, "fixed", batch_entry_id=entry_id)


@pytest.mark.e2e
def test_an_entry_that_cannot_resume_on_a_token_engine_is_crawled_again_as_a_new_query(
    simulator, tmp_path
):
    db_path = tmp_path / "lyra.sqlite3"
    text = (
        "defaults: {serp_max_pages: 2, strategy: fixed, sources: [serp]}\n"
        "queries: [{query: tidal flat, engine: duckduckgo}]\n"
    )
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(text)
    batch = parse_batch(text, load_config(None))
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()

    async def killed_after_page_1(backends) -> int:
        # What a crawl killed after DuckDuckGo's page 1 leaves: its entry running under a dead
        # owner, its query running with page 1 stored.
        store = backends.store
        record = await store.create_batch(
            source=str(batch_file), content_hash=batch.content_hash, entries=entry_specs(batch)
        )
        (entry,) = await store.take_entries(
            record.id, 1, owner=f"{socket.gethostname()}:{gone.pid}", lease_s=300
        )
        query_id = await store.start_query(
            QueryRecord(
                "tidal flat",
                "tidal flat",
                "duckduckgo",
                1,
                2,
                "fixed",
                sources="serp",
                batch_entry_id=entry.id,
            )
        )
        await store.store_page(PageRecord(query_id, "duckduckgo", 1, "ok", 0), [])
        return query_id

    interrupted = with_store(db_path, killed_after_page_1)
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE queries SET pid = ?", (gone.pid,))

    result = run_scrapy("batch", str(batch_file), env=scrapy_env(simulator, db_path))

    assert result.returncode == 0, result.stderr[-3000:]
    assert "cannot resume at page 2" in result.stderr and "as a new query" in result.stderr
    (entry,) = query_db(db_path, "SELECT state, query_id, attempts FROM batch_entries")
    assert (entry["state"], entry["attempts"]) == ("done", 2)
    assert entry["query_id"] != interrupted
    pages = query_db(db_path, "SELECT query_id, page_number FROM serp_pages ORDER BY 1, 2")
    assert [(p["query_id"], p["page_number"]) for p in pages] == [
        (interrupted, 1),
        (entry["query_id"], 1),
        (entry["query_id"], 2),
    ]
    statuses = query_db(db_path, "SELECT id, status FROM queries ORDER BY id")
    assert [(q["id"], q["status"]) for q in statuses] == [
        (interrupted, "interrupted"),
        (entry["query_id"], "finished"),
    ]
