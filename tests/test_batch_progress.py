"""Batch progress: the ETA (pure), plain lines of a non-terminal `scrapy batch`, the live table
under a pseudo-terminal read as a terminal shows it (pyte), and the figures against SQLite."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyte
import pytest

from lyra_crawl.batch.display import ProgressDisplay
from lyra_crawl.batch.progress import (
    OBSERVED_PACE,
    Pace,
    ProgressFigures,
    duration,
    eta_at_pace,
    eta_at_qps,
    progress_line,
    remaining_requests,
)
from lyra_crawl.query.cache_key import cache_key
from lyra_crawl.records import BatchProgress
from tests.conftest import ROOT, Lines, query_db, run_scrapy, start_scrapy, with_store

COLUMNS, ROWS = 110, 40


def batch_env(simulator, db_path: Path, **extra: str) -> dict[str, str]:
    return {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_DB_PATH": str(db_path),
        "LYRA_RATE_LIMIT_ENABLED": "false",
        "LYRA_BROWSER_ENABLED": "false",
        **extra,
    }


def write_batch(path: Path, count: int = 6) -> Path:
    """`count` queries over mojeek and duckduckgo, two SERP pages each, and one bad entry."""
    queries = [
        f"  - {{query: progress {n}, engine: {'mojeek' if n % 2 else 'duckduckgo'}}}"
        for n in range(count)
    ]
    path.write_text(
        "defaults: {serp_max_pages: 2, strategy: fixed, sources: [serp]}\n"
        "queries:\n" + "\n".join(queries) + "\n  - {query: bad one, strategy: greedy}\n"
    )
    return path


def stored_figures(db_path: Path) -> dict[str, object]:
    """What the final progress must say, counted straight from the database."""
    states = Counter(r["state"] for r in query_db(db_path, "SELECT state FROM batch_entries"))
    pages = query_db(
        db_path,
        "SELECT source, COUNT(*) AS n, SUM(items_stored) AS items FROM serp_pages"
        " GROUP BY source ORDER BY source",
    )
    return {
        "states": states,
        "requests": {row["source"]: row["n"] for row in pages},
        "items": sum(row["items"] for row in pages),
    }


# -- the figures (pure) ----------------------------------------------------------------------


def counts(**values: object) -> BatchProgress:
    defaults: dict[str, object] = {"batch_id": 1, "entries": {}}
    return BatchProgress(**{**defaults, **values})  # type: ignore[arg-type]


def test_the_time_left_is_the_work_left_of_the_engine_that_takes_longest():
    progress = counts(
        entries={"done": 4, "running": 2, "pending": 4, "rejected": 1},
        # Four finished entries needed 3 duckduckgo, 9 mojeek and 12 openalex pages.
        finished_pages={"duckduckgo": 3, "mojeek": 9, "openalex": 12},
        running_pages={"mojeek": 2, "openalex": 6},
    )

    left = remaining_requests(progress)
    seconds, pace = eta_at_qps(progress, {"duckduckgo": 0.2, "mojeek": 0.25, "openalex": 10.0})

    # Six entries to go: × the mean per finished entry, less what the running ones fetched.
    assert left == {"duckduckgo": 4.5, "mojeek": 11.5, "openalex": 12.0}
    assert seconds == pytest.approx(11.5 / 0.25)
    assert pace == Pace(0.25, "qps", "mojeek")
    assert eta_at_pace(progress, Pace(2.0, OBSERVED_PACE)) == pytest.approx(28.0 / 2.0)


def test_no_eta_before_an_entry_finished_and_zero_when_nothing_is_left():
    assert eta_at_qps(counts(entries={"pending": 3}), {"mojeek": 1.0}) == (None, None)
    done = counts(entries={"done": 3}, finished_pages={"mojeek": 6})
    assert eta_at_qps(done, {"mojeek": 1.0}) == (0.0, None)
    assert eta_at_pace(done, None) == 0.0


def test_the_plain_line_names_every_figure():
    progress = counts(
        entries={"done": 2, "running": 1, "pending": 3, "failed": 1},
        requests={"mojeek": 7, "duckduckgo": 2},
        items=70,
        blocks={"mojeek": 1},
        finished_pages={"mojeek": 6},
        rate_waits={"mojeek": 5, "duckduckgo": 0},
    )
    figures = ProgressFigures(
        counts=progress, elapsed_s=75, eta_s=3725, pace=Pace(0.25, "qps", "mojeek")
    )

    assert progress_line(figures) == (
        "batch 1: 2 of 7 entries done, 1 running, 3 pending, 1 failed, 0 rejected; "
        "9 requests (duckduckgo 2, mojeek 7); 70 items; blocks mojeek 1; rate waits mojeek 5; "
        "elapsed 1m15s, ETA 1h02m (mojeek at 0.25 requests/s bounds it)"
    )
    assert duration(42) == "42s"


def test_reads_are_spaced_by_the_interval_or_by_what_a_read_costs():
    now = [0.0]
    lines: list[str] = []
    display = ProgressDisplay(
        interval_s=10, emit=lines.append, stream=io.StringIO(), clock=lambda: now[0]
    )

    assert not display.live and display.refresh_s == 10
    assert display.due()
    now[0] = 9.0
    assert not display.due()
    now[0] = 10.0
    assert display.due()
    now[0] = 20.0
    assert not display.due(read_s=1.0), "a 1 s read: at most one every 20 s"
    now[0] = 30.0
    assert display.due(read_s=1.0)
    final = counts(entries={"done": 1})
    display.close(ProgressFigures(counts=final, elapsed_s=3, eta_s=0, pace=None))
    assert lines == [
        "batch 1: 1 of 1 entries done, 0 running, 0 pending, 0 failed, 0 rejected; "
        "0 requests (none); 0 items; blocks none; rate waits none; elapsed 3s, ETA 0s"
    ]


# -- scrapy batch, not on a terminal ---------------------------------------------------------

PROGRESS_LINE = re.compile(
    r"\[lyra_crawl\.batch\.extension\] INFO: batch \d+: (?P<done>\d+) of (?P<total>\d+) entries "
    r"done, (?P<running>\d+) running, (?P<pending>\d+) pending, (?P<failed>\d+) failed, "
    r"(?P<rejected>\d+) rejected; (?P<requests>\d+) requests \((?P<engines>[^)]*)\); "
    r"(?P<items>\d+) items; blocks (?P<blocks>[^;]*); rate waits [^;]*; elapsed \S+, ETA"
)


@pytest.mark.e2e
def test_a_batch_off_the_terminal_logs_plain_progress_lines_ending_with_the_stored_counts(
    start_simulator, db_path, tmp_path
):
    # DuckDuckGo's second pages held until a line has come: one line mid-batch, at least.
    simulator = start_simulator("--hold-at", "duckduckgo:2")
    batch = write_batch(tmp_path / "batch.yaml")

    process = start_scrapy(
        "batch",
        str(batch),
        "--concurrency",
        "2",
        env=batch_env(simulator, db_path, LYRA_PROGRESS_INTERVAL="0.2"),
    )
    said = Lines(process.stderr)
    said.wait_for("entries done")
    simulator.release("duckduckgo", 2)
    process.wait(timeout=300)
    stderr = said.text()

    assert process.returncode == 1, stderr[-3000:]  # the bad entry
    lines = [found for found in map(PROGRESS_LINE.search, stderr.splitlines()) if found]
    assert int(lines[0]["done"]) < 6, "a line mid-batch"
    last = lines[-1]
    stored = stored_figures(db_path)
    assert stored["states"] == {"done": 6, "rejected": 1}
    assert (last["done"], last["total"], last["running"], last["pending"]) == ("6", "7", "0", "0")
    assert (last["failed"], last["rejected"]) == ("0", "1")
    assert int(last["requests"]) == sum(stored["requests"].values()) == 12
    assert last["engines"] == ", ".join(f"{e} {n}" for e, n in stored["requests"].items())
    assert int(last["items"]) == stored["items"]
    assert last["blocks"] == "none"
    # The lines before counted up to it.
    done = [int(line["done"]) for line in lines]
    assert done == sorted(done)


# -- scrapy batch on a (pseudo-)terminal -----------------------------------------------------


def run_on_terminal(
    *args: str,
    env: dict[str, str],
    timeout: float = 180,
    on_output: Callable[[bytes], None] = lambda output: None,
) -> tuple[int, bytes]:
    """`scrapy ARGS` with stdin, stdout and stderr on a pseudo-terminal of COLUMNS × ROWS;
    returns its exit status and every byte it wrote to the terminal. `on_output` sees the
    output so far after every read."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=ROOT,
        env={**os.environ, "TERM": "xterm-256color", **env},
        stdin=slave,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    output = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
                on_output(bytes(output))
            elif process.poll() is not None:
                break
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
        process.wait()
    return process.returncode, bytes(output)


def screen_of(output: bytes) -> list[str]:
    """What a terminal shows after `output` (tall enough that nothing scrolls away)."""
    screen = pyte.Screen(COLUMNS, 2000)
    pyte.ByteStream(screen).feed(output)
    lines = [line.rstrip() for line in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.mark.e2e
def test_the_live_table_on_a_terminal_stays_whole_and_ends_with_the_stored_counts(
    start_simulator, db_path, tmp_path
):
    # DuckDuckGo's second pages held until the table has been drawn and redrawn.
    simulator = start_simulator("--hold-at", "duckduckgo:2")
    batch = write_batch(tmp_path / "batch.yaml")
    released = []

    def release_once_redrawn(output: bytes) -> None:
        if not released and output.count(b"entries over") >= 2:
            simulator.release("duckduckgo", 2)
            released.append(True)

    status, output = run_on_terminal(
        "batch",
        str(batch),
        "--concurrency",
        "2",
        "-s",
        "LOG_LEVEL=INFO",  # log records keep arriving while the table is up
        env=batch_env(simulator, db_path, LYRA_PROGRESS_INTERVAL="0.2"),
        on_output=release_once_redrawn,
    )

    assert status == 1, output[-3000:].decode(errors="replace")
    assert released, "the table was drawn and redrawn while DuckDuckGo's pages were held"
    assert output.count(b"entries over") >= 3, "drawn, redrawn, and drawn last"
    lines = screen_of(output)
    titles = [i for i, line in enumerate(lines) if re.match(r"batch \d+ +\d+ of \d+ entries", line)]
    assert len(titles) == 1, "\n".join(lines[-60:])  # redrawn in place, never left behind
    table = lines[titles[0] :]
    stored = stored_figures(db_path)
    assert re.match(r"batch \d+ +6 of 6 entries over .* ETA 0s$", table[0]), table[0]
    assert table[1].endswith(" 100%")
    assert table[2].split() == [
        *("done", "6", "running", "0", "pending", "0", "failed", "0", "rejected", "1")
    ]
    assert table[3].split() == ["engine", "requests", "rate", "waits", "blocks"]
    engines = table[4 : 4 + len(stored["requests"])]
    assert [row.split()[:2] for row in engines] == [
        [engine, str(n)] for engine, n in stored["requests"].items()
    ]
    total = table[4 + len(stored["requests"])]
    assert total.split()[:2] == ["total", "12"]
    assert table[5 + len(stored["requests"])] == f"{stored['items']} items stored, 6 queries"
    # The batch's own summary follows the table, and every log record stayed above it.
    assert table[6 + len(stored["requests"])].startswith("entry 1 ")
    assert "6 of 7 entries succeeded" in table[-1]
    assert not any(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[", line) for line in table)
    assert any("[scrapy.core.engine] INFO: Spider opened" in line for line in lines[: titles[0]])


# -- the figures in the store ----------------------------------------------------------------


@pytest.mark.e2e
def test_entries_the_cache_answers_are_done_without_requests(simulator, db_path, tmp_path):
    batch = write_batch(tmp_path / "batch.yaml", count=2)
    env = batch_env(simulator, db_path, LYRA_PROGRESS_INTERVAL="0")
    assert run_scrapy("batch", str(batch), env=env).returncode == 1
    queries = query_db(db_path, "SELECT id, query_text, engine, serp_max_pages FROM queries")
    now = datetime.now(UTC)

    async def cache_and_read(backends):
        store = backends.store
        for row in queries:
            key = cache_key(row["query_text"], [row["engine"]], None, row["serp_max_pages"])
            await store.store_cache_entry(
                key, row["id"], created_at=now, expires_at=now + timedelta(hours=1)
            )
        return await store.batch_progress(1)

    first = with_store(db_path, cache_and_read)
    # The same queries in another file: a new batch, every entry answered when recorded.
    again = tmp_path / "again.yaml"
    again.write_text(batch.read_text() + "# again\n")
    assert run_scrapy("batch", str(again), env=env).returncode == 1
    second = with_store(db_path, lambda backends: backends.store.batch_progress(2))

    stored = stored_figures(db_path)
    assert dict(first.entries) == {"done": 2, "rejected": 1}
    assert (first.cached_entries, first.crawled_entries, first.queries) == (0, 2, 2)
    assert dict(first.requests) == dict(first.finished_pages) == stored["requests"]
    assert first.items == stored["items"] and first.running_pages == {}
    assert dict(second.entries) == {"done": 2, "rejected": 1}
    assert (second.cached_entries, second.crawled_entries, second.queries) == (2, 0, 0)
    assert (dict(second.requests), second.items) == ({}, 0)
