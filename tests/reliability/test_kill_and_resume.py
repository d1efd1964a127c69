"""Kill, cancel and resume: SIGKILL or SIGTERM mid-crawl leaves whole pages, and
`-a resume=true` finishes the rest.

The simulator holds page 5 back until the test releases it, so the signal lands after page 4 is
stored and while page 5 is asked for. The
next open of the database finds a killed crawl's row `running` with a dead pid and marks it
interrupted; a crawl sent SIGTERM closes itself, its row `cancelled`. Resuming reopens that same
row and goes on after its last stored page.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import (
    Lines,
    Simulator,
    query_db,
    run_scrapy,
    scrapy_env,
    start_scrapy,
    with_store,
)

QUERY = "kill and resume"
PAGES = 10


def crawl_args(*extra: str) -> list[str]:
    return [
        "crawl",
        "serp",
        "-a",
        f"query={QUERY}",
        "-a",
        f"serp_max_pages={PAGES}",
        "-a",
        "strategy=fixed",
        "-a",
        "sources=serp",
        *extra,
    ]


def stored_pages(db_path: Path, source: str | None = None) -> int:
    """Pages stored so far (of one source, or of all)."""
    if not db_path.exists():
        return 0
    try:
        return query_db(
            db_path,
            "SELECT COUNT(*) FROM serp_pages WHERE ? IS NULL OR source = ?",
            (source, source),
        )[0][0]
    except sqlite3.OperationalError:  # the crawl is still creating its tables
        return 0


def wait_for(process: subprocess.Popen[str], condition: Callable[[], bool], what: str) -> None:
    """Until `condition()` holds, `process` running all along."""
    deadline = time.monotonic() + 60
    while not condition():
        assert process.poll() is None, process.stderr.read()[-3000:]
        assert time.monotonic() < deadline, f"the crawl never {what}"
        time.sleep(0.05)


def wait_for_pages(
    process: subprocess.Popen[str], db_path: Path, pages: int, source: str | None = None
) -> None:
    """Until `pages` pages (of `source`) are stored by the running `process`."""
    wait_for(
        process,
        lambda: stored_pages(db_path, source) >= pages,
        f"stored {pages} pages of {source}",
    )


def wait_until_held(
    process: subprocess.Popen[str], simulator: Simulator, engine: str, page: int, count: int = 1
) -> None:
    """Until `count` requests of `process` for the page the simulator holds wait for it."""
    wait_for(
        process,
        lambda: simulator.held(engine, page, count, timeout_s=1),
        f"asked for {engine}'s page {page}",
    )


def signal_while_held(
    process: subprocess.Popen[str],
    signum: int,
    simulator: Simulator,
    engine: str,
    page: int,
    heard_by: int = 1,
) -> str:
    """Send `signum` to `process` while the simulator holds its requests for the page, and
    release them once `heard_by` crawls have said they received it: the pages in flight when
    the signal came are answered after it. The process's stderr, once it has ended."""
    said = Lines(process.stderr)
    process.send_signal(signum)
    said.wait_for(f"Received {signal.Signals(signum).name}", count=heard_by)
    simulator.release(engine, page)
    process.wait(timeout=60)
    return said.text()


def signal_after_pages(
    process: subprocess.Popen[str],
    db_path: Path,
    pages: int,
    signum: int,
    source: str | None = None,
) -> str:
    """Send `signum` to `process` once `pages` pages (of `source`) are stored; wait for it to
    end and return its stderr."""
    wait_for_pages(process, db_path, pages, source)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)  # a zombie's pid would still look alive
    return stderr


def kill_after_pages(args: list[str], env: dict[str, str], db_path: Path, pages: int) -> None:
    """Start `scrapy ARGS`, SIGKILL it once `pages` pages are stored, and reap it."""
    process = start_scrapy(*args, env=env)
    signal_after_pages(process, db_path, pages, signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL


def assert_whole_pages(db_path: Path) -> None:
    assert query_db(db_path, "PRAGMA integrity_check")[0][0] == "ok"
    pages = query_db(db_path, "SELECT query_id, source, page_number, items_stored FROM serp_pages")
    for page in pages:
        items = query_db(
            db_path,
            "SELECT COUNT(*) FROM serp_items WHERE query_id = ? AND source = ? AND page_number = ?",
            (page["query_id"], page["source"], page["page_number"]),
        )[0][0]
        assert items == page["items_stored"], dict(page)
    orphans = query_db(
        db_path,
        "SELECT COUNT(*) FROM serp_items i WHERE NOT EXISTS (SELECT 1 FROM serp_pages p"
        " WHERE p.query_id = i.query_id AND p.source = i.source"
        " AND p.page_number = i.page_number)",
    )[0][0]
    assert orphans == 0, "items of a page whose page row was never written"


@pytest.mark.e2e
def test_a_killed_crawl_is_marked_interrupted_and_resumes_at_page_five(start_simulator, db_path):
    simulator = start_simulator("--hold-at", "mojeek:5")
    env = scrapy_env(simulator, db_path)

    process = start_scrapy(*crawl_args("-a", "engine=mojeek"), env=env)
    wait_for_pages(process, db_path, 4)
    # Killed while page 5 waits for its held answer: asked, never stored.
    wait_until_held(process, simulator, "mojeek", 5)
    process.kill()
    process.communicate(timeout=60)  # a zombie's pid would still look alive
    assert process.returncode == -signal.SIGKILL

    assert_whole_pages(db_path)
    pages = query_db(db_path, "SELECT page_number FROM serp_pages ORDER BY 1")
    assert [row[0] for row in pages] == [1, 2, 3, 4]
    assert query_db(db_path, "SELECT status FROM queries")[0][0] == "running"
    with_store(db_path, lambda backends: asyncio.sleep(0))  # what every next start does first
    assert query_db(db_path, "SELECT status FROM queries")[0][0] == "interrupted"

    # No engine given: the interrupted crawl's own engine is used (and no browser loaded for
    # the engines it might have chosen).
    simulator.release("mojeek", 5)
    result = run_scrapy(
        *crawl_args("-a", "resume=true"), env={**env, "LYRA_BROWSER_ENABLED": "false"}
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert "resumed at pages {'mojeek': 5}" in result.stderr
    assert_whole_pages(db_path)
    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "finished" and query["engine"] == "mojeek"
    pages = query_db(db_path, "SELECT page_number FROM serp_pages ORDER BY 1")
    assert [row[0] for row in pages] == list(range(1, PAGES + 1))
    assert query["pages_fetched"] == PAGES
    asked = [entry["params"].get("s", "1") for entry in simulator.requests("mojeek")]
    assert len(asked) == PAGES + 1  # page 5 twice: once killed while waiting, once resumed
    items = query_db(db_path, "SELECT rank, normalized_url FROM serp_items ORDER BY rank")
    assert [row[0] for row in items] == list(range(1, len(items) + 1))
    assert len({row[1] for row in items}) == len(items) == query["items"]
    # The merge covers the pages stored before the kill too: every item has a fused rank, and
    # the DOI results of page 1 (every fifth simulated result has one) are linked to papers.
    ranks = query_db(db_path, "SELECT fused_rank FROM serp_items")
    assert all(row[0] for row in ranks)
    linked = query_db(db_path, "SELECT page_number FROM serp_items WHERE paper_id IS NOT NULL")
    assert 1 in {row[0] for row in linked}


@pytest.mark.e2e
def test_a_token_engine_refuses_to_resume_mid_crawl(start_simulator, db_path):
    simulator = start_simulator("--hold-at", "duckduckgo:3")
    env = scrapy_env(simulator, db_path)
    kill_after_pages(crawl_args("-a", "engine=duckduckgo"), env, db_path, pages=2)
    before = len(simulator.requests())

    result = run_scrapy(*crawl_args("-a", "engine=duckduckgo", "-a", "resume=true"), env=env)

    assert "cannot resume at page 3: engine duckduckgo hands a token" in result.stderr
    assert len(simulator.requests()) == before
    (query,) = query_db(db_path, "SELECT status FROM queries")
    assert query["status"] == "interrupted"
    assert_whole_pages(db_path)


@pytest.mark.e2e
def test_a_crawl_sent_sigterm_ends_cancelled_keeps_its_pages_and_resumes(start_simulator, db_path):
    # openalex stops for good (an empty page 2) before the signal; mojeek is mid-crawl.
    simulator = start_simulator("--hold-at", "mojeek:5", "--empty-after", "openalex:1")
    env = scrapy_env(simulator, db_path)
    args = crawl_args("-a", "engine=mojeek", "-a", "sources=serp,openalex")
    process = start_scrapy(*args, env=env)
    wait_for_pages(process, db_path, 2, "openalex")
    wait_for_pages(process, db_path, 4, "mojeek")
    wait_until_held(process, simulator, "mojeek", 5)

    stderr = signal_while_held(process, signal.SIGTERM, simulator, "mojeek", 5)

    assert process.returncode == 0, stderr[-3000:]
    assert "Received SIGTERM" in stderr and " ERROR: " not in stderr, stderr[-3000:]
    assert_whole_pages(db_path)
    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "cancelled"
    assert json.loads(query["stop_reason"]) == {"mojeek": "cancelled", "openalex": "empty_page"}
    kept = [
        row[0]
        for row in query_db(
            db_path, "SELECT page_number FROM serp_pages WHERE source = 'mojeek' ORDER BY 1"
        )
    ]
    # The page in flight when the signal came is fetched and stored; nothing after it.
    assert kept == [1, 2, 3, 4, 5], kept
    assert query["pages_fetched"] == len(kept) + 2
    openalex_asked = len(simulator.requests("openalex"))

    result = run_scrapy(*args, "-a", "resume=true", env=env)

    assert result.returncode == 0, result.stderr[-3000:]
    assert f"resumed at pages {{'mojeek': {len(kept) + 1}}}" in result.stderr
    assert_whole_pages(db_path)
    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "finished"
    assert json.loads(query["stop_reason"]) == {"mojeek": "max_pages", "openalex": "empty_page"}
    pages = query_db(
        db_path, "SELECT page_number FROM serp_pages WHERE source = 'mojeek' ORDER BY 1"
    )
    assert [row[0] for row in pages] == list(range(1, PAGES + 1))
    # openalex had stopped for good: the resumed crawl asks it nothing.
    assert len(simulator.requests("openalex")) == openalex_asked


@pytest.mark.e2e
def test_a_resumed_source_with_every_page_stored_stops_at_max_pages_with_no_request(
    start_simulator, db_path
):
    simulator = start_simulator()
    env = scrapy_env(simulator, db_path)
    args = crawl_args("-a", "engine=mojeek")
    assert run_scrapy(*args, env=env).returncode == 0
    # What a crawl killed after storing its last page, before recording why its source
    # stopped, leaves behind (its row marked interrupted by the next start).
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE queries SET status = 'interrupted', stop_reason = '{}'")
    asked = len(simulator.requests())

    result = run_scrapy(*args, "-a", "resume=true", env=env)

    assert result.returncode == 0, result.stderr[-3000:]
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    assert f"mojeek stops: max_pages (pages 1..{PAGES} already stored)" in result.stderr
    assert len(simulator.requests()) == asked
    (query,) = query_db(db_path, "SELECT status, stop_reason FROM queries")
    assert query["status"] == "finished"
    assert json.loads(query["stop_reason"]) == {"mojeek": "max_pages"}
    assert_whole_pages(db_path)
