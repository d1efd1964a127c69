"""`scrapy batch --processes N`: one batch crawled by N processes on this machine, sharing the
store's entries; their logs relayed, signals handed on, a crashed one reported."""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lyra_crawl.batch.workers import CrawlExit, run_crawls
from tests.conftest import (
    Lines,
    Simulator,
    edited_config,
    query_db,
    run_scrapy,
    scrapy_env,
    start_scrapy,
)
from tests.reliability.test_kill_and_resume import (
    assert_whole_pages,
    signal_while_held,
    wait_for,
    wait_for_pages,
    wait_until_held,
)
from tests.test_batch_at_scale import four_page_batch


def crawl_pids(db_path: Path) -> set[int]:
    return {row["pid"] for row in query_db(db_path, "SELECT DISTINCT pid FROM queries")}


def assert_each_entry_done_once_with_its_four_pages(db_path: Path, topic: str, count: int) -> None:
    assert_whole_pages(db_path)
    entries = query_db(db_path, "SELECT state, query_id FROM batch_entries ORDER BY position")
    assert [e["state"] for e in entries] == ["done"] * count
    queries = query_db(db_path, "SELECT id, query_text, status FROM queries ORDER BY id")
    assert sorted(q["query_text"] for q in queries) == sorted(f"{topic} {n}" for n in range(count))
    assert sorted(e["query_id"] for e in entries) == [q["id"] for q in queries]
    assert {q["status"] for q in queries} == {"finished"}
    pages = query_db(db_path, "SELECT query_id, page_number FROM serp_pages ORDER BY 1, 2")
    assert [(p["query_id"], p["page_number"]) for p in pages] == [
        (q["id"], n) for q in queries for n in (1, 2, 3, 4)
    ]


@pytest.mark.e2e
def test_a_batch_crawled_by_two_processes_runs_each_entry_once_in_both(start_simulator, tmp_path):
    db_path = tmp_path / "lyra.sqlite3"
    # Page 2 held until two requests wait for it: a crawl sends one request at a time to an
    # engine (its download slot), so both crawls took entries before any could finish,
    # however loaded the machine.
    simulator = start_simulator("--hold-at", "mojeek:2")
    batch_file = four_page_batch(tmp_path, "fjord", 8)
    env = scrapy_env(simulator, db_path)
    # The store is named on the command line only: the crawls get it from there.
    del env["LYRA_DB_PATH"]

    run = start_scrapy(
        "batch",
        str(batch_file),
        "--processes",
        "2",
        "--concurrency",
        "2",
        "-s",
        f"LYRA_DB_PATH={db_path}",
        env=env,
        stdout=True,
    )
    said = Lines(run.stderr)
    wait_until_held(run, simulator, "mojeek", 2, count=2)
    simulator.release("mojeek", 2)
    run.wait(timeout=300)
    stdout, stderr = run.stdout.read(), said.text()

    assert run.returncode == 0, stderr[-3000:]
    assert "8 of 8 entries succeeded" in stdout
    assert " ERROR: " not in stderr, stderr[-3000:]
    assert_each_entry_done_once_with_its_four_pages(db_path, "fjord", 8)
    assert len(crawl_pids(db_path)) == 2, "both processes took entries"
    # Their logs came through this command, each line with its crawl's number.
    logged = stderr.splitlines()
    for number in (1, 2):
        assert any(
            line.startswith(f"[crawl {number}] ") and "Spider closed (finished)" in line
            for line in logged
        ), stderr[-3000:]
    assert not any(line.startswith("[crawl 3]") for line in logged)


@pytest.mark.e2e
@pytest.mark.parametrize("backends", ["sqlite", "postgres+redis"])
def test_two_processes_keep_an_engine_s_requests_one_tenth_of_a_second_apart(
    backends, start_simulator, tmp_path, request
):
    # Each answer takes 60 ms: a claim one crawl makes while the other's request is in flight
    # finds the slot held and waits for its release, however the two crawls' requests fall on
    # a loaded machine (answered at once, that window was a few ms and one crawl could miss
    # it). 8 entries, so that each crawl still has entries when the other starts.
    simulator = start_simulator("--latency-ms", "60")
    config = edited_config(tmp_path / "config", lambda doc: doc["engines"]["mojeek"].update(qps=10))
    batch_file = four_page_batch(tmp_path, "cove", 8)
    env = {
        **scrapy_env(simulator, tmp_path / "lyra.sqlite3"),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_RATE_LIMIT_ENABLED": "true",
    }
    if backends == "postgres+redis":
        env["LYRA_DB_PATH"] = ""  # the URLs name the backends
        env["LYRA_DB_URL"] = request.getfixturevalue("postgres_url")
        env["LYRA_COORDINATION_URL"] = request.getfixturevalue("redis_url")

    run = run_scrapy(
        "batch", str(batch_file), "--processes", "2", "--concurrency", "2", "-L", "INFO", env=env
    )

    assert run.returncode == 0, run.stderr[-3000:]
    assert "8 of 8 entries succeeded" in run.stdout
    assert " ERROR: " not in run.stderr, run.stderr[-3000:]
    times = sorted(r["time"] for r in simulator.requests("mojeek"))
    assert len(times) == 32
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.095, gaps
    # Both crawls sent to mojeek: the slot was shared, each told of the other's releases.
    waits = []
    for number in (1, 2):
        assert f"[crawl {number}]  'lyra/mojeek/rate/release_waits'" in run.stderr
        found = re.search(
            rf"^\[crawl {number}\]  'lyra/mojeek/rate/waits': (\d+)", run.stderr, re.M
        )
        assert found, run.stderr[-3000:]
        waits.append(int(found[1]))
    assert "rate/release_waits_unheard" not in run.stderr
    # The command's last progress line, read from the store, has both crawls' waits.
    last = [line for line in run.stdout.splitlines() if line.startswith("batch 1: 8 of 8")]
    assert last and f"; rate waits mojeek {sum(waits)}; " in last[-1], run.stdout[-3000:]


@dataclass(frozen=True)
class BatchMidway:
    """A `scrapy batch` of 6 four-page entries crawled by 2 processes, both running."""

    command: subprocess.Popen[str]
    simulator: Simulator
    db_path: Path
    args: list[str]
    env: dict[str, str]
    topic: str

    def run_again_to_the_end(self) -> None:
        """The batch run again continues and finishes, each entry once with its pages."""
        self.simulator.release("mojeek", 3)
        again = run_scrapy(*self.args, env=self.env)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "continuing batch 1" in again.stdout and "6 of 6 entries succeeded" in again.stdout
        assert " ERROR: " not in again.stderr, again.stderr[-3000:]
        assert_each_entry_done_once_with_its_four_pages(self.db_path, self.topic, 6)


def batch_midway(start_simulator: Any, tmp_path: Path, topic: str) -> BatchMidway:
    db_path = tmp_path / "lyra.sqlite3"
    # Page 3 held: no entry can finish while both crawls start, however loaded the machine.
    simulator = start_simulator("--hold-at", "mojeek:3")
    args = ["batch", str(four_page_batch(tmp_path, topic, 6)), "--processes", "2"]
    args += ["--concurrency", "2"]
    env = scrapy_env(simulator, db_path)
    command = start_scrapy(*args, env=env)
    wait_for_pages(command, db_path, 4)
    wait_for(command, lambda: len(crawl_pids(db_path)) == 2, "ran two crawls")
    return BatchMidway(command, simulator, db_path, args, env, topic)


@pytest.mark.e2e
def test_ctrl_c_reaches_each_crawl_once_and_the_batch_run_again_finishes(start_simulator, tmp_path):
    batch = batch_midway(start_simulator, tmp_path, "skerry")
    first = batch.command

    # The batch command hands the signal on to both crawls.
    stderr = signal_while_held(first, signal.SIGINT, batch.simulator, "mojeek", 3, heard_by=2)

    assert first.returncode == 1, stderr[-3000:]
    received = [line for line in stderr.splitlines() if "Received SIGINT" in line]
    assert sorted(line[: len("[crawl 1]")] for line in received) == ["[crawl 1]", "[crawl 2]"]
    assert "forcing unclean shutdown" not in stderr and " ERROR: " not in stderr, stderr[-3000:]
    states = [e["state"] for e in query_db(batch.db_path, "SELECT state FROM batch_entries")]
    assert "running" not in states and "done" not in states, states
    batch.run_again_to_the_end()


def children(pid: int) -> set[int]:
    """The processes `pid` started that still run (Linux's /proc)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(child) for child in (task / "children").read_text().split())
    return found


def ignores_sighup(pid: int) -> bool:
    """Whether `pid` ignores SIGHUP, as a crawl does once its parent's death signal (SIGHUP)
    became its one SIGTERM (lyra_crawl.batch.workers.stop_with_batch_command), or has ended."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    ignored = int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
    return bool(ignored & (1 << (signal.SIGHUP - 1)))


def gone(pid: int) -> bool:
    """Whether `pid` has ended (a zombie its dead parent left is reaped by init)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


@pytest.mark.e2e
def test_crawls_stop_gracefully_when_their_batch_command_is_killed(start_simulator, tmp_path):
    batch = batch_midway(start_simulator, tmp_path, "sandbar")
    crawls = children(batch.command.pid)
    assert crawls == crawl_pids(batch.db_path)

    batch.command.kill()  # SIGKILL: the command hands nothing on
    batch.command.wait()
    # The pages in flight are answered once each crawl has turned its death signal into SIGTERM.
    deadline = time.monotonic() + 60
    while not all(ignores_sighup(pid) for pid in crawls):
        assert time.monotonic() < deadline, "a crawl was not told to stop with its batch command"
        time.sleep(0.05)
    batch.simulator.release("mojeek", 3)
    while not all(gone(pid) for pid in crawls):
        assert time.monotonic() < deadline, "a crawl went on without its batch command"
        time.sleep(0.1)

    # Each stopped as on SIGTERM: its running entries back to pending, nothing left running.
    states = [e["state"] for e in query_db(batch.db_path, "SELECT state FROM batch_entries")]
    assert "running" not in states and "pending" in states, states
    batch.run_again_to_the_end()


@pytest.mark.e2e
def test_a_crawl_process_killed_mid_batch_is_reported_and_the_other_finishes_its_entries(
    start_simulator, tmp_path
):
    db_path = tmp_path / "lyra.sqlite3"
    simulator = start_simulator("--hold-at", "mojeek:3")
    batch_file = four_page_batch(tmp_path, "tombolo", 8)
    env = scrapy_env(simulator, db_path)
    batch = start_scrapy(
        "batch", str(batch_file), "--processes", "2", "--concurrency", "1", env=env
    )
    # Each crawl in the middle of a query, its pages 1 and 2 stored, page 3 held.
    wait_for_pages(batch, db_path, 4)
    wait_until_held(batch, simulator, "mojeek", 3, count=2)
    (victim, _) = sorted(crawl_pids(db_path))

    signal_sent_at = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    simulator.release("mojeek", 3)
    _, stderr = batch.communicate(timeout=120)

    assert batch.returncode == 1, stderr[-3000:]
    assert f"(pid {victim}) was killed by SIGKILL" in stderr, stderr[-3000:]
    assert " ERROR: " not in stderr, stderr[-3000:]
    assert time.monotonic() - signal_sent_at < 60
    assert_each_entry_done_once_with_its_four_pages(db_path, "tombolo", 8)
    attempts = query_db(db_path, "SELECT attempts FROM batch_entries")
    assert any(row["attempts"] == 2 for row in attempts), "the killed crawl's entry ran again"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--processes", "0"], "--processes must be 1 or more"),
        (
            ["--processes", "2", "--scrapyd", "http://127.0.0.1:6800"],
            "--processes runs crawls here",
        ),
    ],
)
@pytest.mark.subprocess
def test_bad_process_options_are_refused_before_anything_is_recorded(options, message, tmp_path):
    db_path = tmp_path / "lyra.sqlite3"
    batch_file = four_page_batch(tmp_path, "reef", 2)

    run = run_scrapy("batch", str(batch_file), *options, env={"LYRA_DB_PATH": str(db_path)})

    assert run.returncode == 2
    assert message in run.stderr
    assert not db_path.exists()


@pytest.mark.subprocess
def test_each_crawl_s_stderr_comes_through_line_by_line_with_its_number(capfd):
    said = "import sys; sys.stderr.write('first\\nsecond, unfinished'); sys.exit(3)"

    exits = run_crawls(2, [sys.executable, "-c", said])

    logged = capfd.readouterr().err.splitlines()
    for number in (1, 2):
        mine = [line for line in logged if line.startswith(f"[crawl {number}] ")]
        assert mine == [f"[crawl {number}] first", f"[crawl {number}] second, unfinished"]
    assert [(crawl.number, crawl.status) for crawl in exits] == [(1, 3), (2, 3)]
    assert exits[0].describe() == f"crawl process 1 (pid {exits[0].pid}) exited with status 3"


@pytest.mark.subprocess
def test_crawls_are_stopped_when_this_command_fails_while_they_run(tmp_path):
    started = tmp_path / "started"
    started.mkdir()
    sleeper = "import os, sys, time; open(f'{sys.argv[1]}/{os.getpid()}', 'w'); time.sleep(60)"

    def fail_once_both_run() -> None:
        if len(list(started.iterdir())) == 2:
            raise RuntimeError("the store went away")

    with pytest.raises(RuntimeError, match="the store went away"):
        run_crawls(2, [sys.executable, "-c", sleeper, str(started)], on_poll=fail_once_both_run)

    # Stopped and reaped: their pids are gone.
    assert [Path(f"/proc/{pid.name}").exists() for pid in started.iterdir()] == [False, False]


def test_a_crawl_killed_by_a_signal_is_described_by_its_name():
    assert CrawlExit(2, 4242, -signal.SIGKILL).describe() == (
        "crawl process 2 (pid 4242) was killed by SIGKILL"
    )
