"""The worker thread every SQLite statement runs on: answers and errors come back to the asking
loop, in order; stopping lets handed-in work finish; work in flight at exit still completes;
writes queued together share one transaction, a write alone takes no savepoint; another process's
write lock is waited for, and the writes queued meanwhile go in with the waiting one; a write's
reads made before the lock run outside any transaction; urgent work (the coordinator's) goes
before the work queued, its writes in a transaction of their own."""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from lyra_crawl.backends.sqlite.database import CONTENDED_MIN_S, SqliteDatabase
from lyra_crawl.backends.sqlite.worker import WorkerThread
from lyra_crawl.records import BackendError
from tests.backends.lock_holders import wait_for_a_waiter_on
from tests.conftest import in_own_loop, query_db

ROOT = Path(__file__).resolve().parents[2]


def test_answers_and_errors_come_back_in_the_order_handed_in():
    worker = WorkerThread("lyra-test")
    done: list[int] = []

    def job(n: int) -> str:
        time.sleep(0.01 * (3 - n))  # the first takes longest: order is kept all the same
        done.append(n)
        return threading.current_thread().name

    def fail() -> None:
        raise ValueError("from the worker")

    async def work():
        names = await asyncio.gather(*(worker.run(lambda n=n: job(n)) for n in range(3)))
        with pytest.raises(ValueError, match="from the worker"):
            await worker.run(fail)
        return names

    try:
        assert in_own_loop(work()) == ["lyra-test"] * 3
    finally:
        worker.stop()
    assert done == [0, 1, 2]


def test_a_job_with_reads_before_runs_them_first_on_the_worker_even_without_groups():
    worker = WorkerThread("lyra-test")  # no group runner: every job runs alone
    ran: list[tuple[str, str]] = []

    def note(step: str) -> None:
        ran.append((step, threading.current_thread().name))

    try:
        in_own_loop(worker.run_grouped(lambda: note("work"), before=lambda: note("before")))
    finally:
        worker.stop()
    assert ran == [("before", "lyra-test"), ("work", "lyra-test")]


def test_stopping_lets_handed_in_work_finish_then_refuses_more():
    worker = WorkerThread("lyra-test")
    started, release = threading.Event(), threading.Event()

    def in_flight() -> str:
        started.set()
        release.wait(10)
        return "finished"

    async def work():
        slow = asyncio.ensure_future(worker.run(in_flight))
        await until(lambda: started.wait(30))  # running when the stop comes
        stopping = asyncio.get_running_loop().run_in_executor(None, worker.stop)
        await until(lambda: wait_for(lambda: worker.stopped))
        with pytest.raises(RuntimeError, match="stopped"):
            await worker.run(lambda: None)
        release.set()
        await stopping
        return await slow

    assert in_own_loop(work()) == "finished"
    worker.stop()  # a second stop does nothing


def wait_for(condition: Callable[[], bool], timeout_s: float = 30) -> bool:
    """Whether `condition()` came to hold within `timeout_s` (looked at every 10 ms)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_closed_database_says_so(tmp_path):
    database = SqliteDatabase(tmp_path / "db.sqlite3")

    async def work():
        await database.open()
        await database.close()
        await database.read(lambda conn: None)

    with pytest.raises(BackendError, match="is closed"):
        in_own_loop(work())


def test_a_closed_database_refuses_writes_as_well(tmp_path):
    database = SqliteDatabase(tmp_path / "db.sqlite3")

    async def work():
        await database.open()
        await database.close()
        await database.write(lambda conn: None, before=lambda conn: None)

    with pytest.raises(BackendError, match="is closed"):
        in_own_loop(work())


EXITS_WITH_A_WRITE_IN_FLIGHT = """
import asyncio, sys, threading, time
from pathlib import Path
from lyra_crawl.backends.sqlite.database import CONTENDED_MIN_S, SqliteDatabase

async def main():
    database = SqliteDatabase(Path(sys.argv[1]))
    await database.open()
    started = threading.Event()
    def slow_write(conn):
        started.set()
        time.sleep(0.3)  # in flight while the interpreter exits
        conn.execute("INSERT INTO engine_usage (engine, date, usage_count) VALUES ('e', 'd', 7)")
    asyncio.ensure_future(database.write(slow_write))
    # The write has started; the loop ends without waiting for it.
    assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)

asyncio.run(main())
"""


@pytest.mark.subprocess
def test_a_write_in_flight_when_the_process_exits_still_completes(tmp_path):
    path = tmp_path / "db.sqlite3"
    done = subprocess.run(
        [sys.executable, "-c", EXITS_WITH_A_WRITE_IN_FLIGHT, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [tuple(row) for row in query_db(path, "SELECT * FROM engine_usage")] == [("e", "d", 7)]


def test_writes_queued_together_share_one_commit_and_a_failing_one_is_undone_alone(tmp_path):
    database = SqliteDatabase(tmp_path / "group.sqlite3")
    statements: list[str] = []
    release = threading.Event()

    def insert(*values: int) -> Callable[[sqlite3.Connection], None]:
        def work(conn: sqlite3.Connection) -> None:
            for value in values:
                conn.execute("INSERT INTO numbers VALUES (?)", (value,))

        return work

    async def work():
        await database.open()
        await database.write(lambda conn: conn.execute("CREATE TABLE numbers (n UNIQUE)"))
        await database.read(lambda conn: conn.set_trace_callback(statements.append))
        busy = asyncio.ensure_future(database.read(lambda conn: release.wait(10)))
        writes = [
            asyncio.ensure_future(database.write(insert(*values)))
            for values in ((1,), (2, 1), (3,))
        ]
        await asyncio.sleep(0)  # all three handed in, behind the busy worker
        release.set()
        await busy
        outcomes = await asyncio.gather(*writes, return_exceptions=True)
        await database.read(lambda conn: conn.set_trace_callback(None))
        rows = await database.read(lambda conn: conn.execute("SELECT n FROM numbers").fetchall())
        await database.close()
        return outcomes, sorted(row[0] for row in rows)

    outcomes, numbers = in_own_loop(work())

    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], sqlite3.IntegrityError)
    assert numbers == [1, 3], "the failing write's first insert was undone with it"
    assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
    ]


def test_a_write_alone_is_its_own_transaction_without_a_savepoint(tmp_path):
    # A savepoint would copy every page the write changes to its journal first; alone, a
    # failing write is undone whole by its transaction's rollback.
    database = SqliteDatabase(tmp_path / "alone.sqlite3")
    statements: list[str] = []

    def insert_twice(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO numbers VALUES (1)")
        conn.execute("INSERT INTO numbers VALUES (1)")

    async def work():
        await database.open()
        await database.write(lambda conn: conn.execute("CREATE TABLE numbers (n UNIQUE)"))
        await database.read(lambda conn: conn.set_trace_callback(statements.append))
        await database.write(lambda conn: conn.execute("INSERT INTO numbers VALUES (2)"))
        with pytest.raises(sqlite3.IntegrityError):
            await database.write(insert_twice)
        await database.read(lambda conn: conn.set_trace_callback(None))
        rows = await database.read(lambda conn: conn.execute("SELECT n FROM numbers").fetchall())
        await database.close()
        return [row[0] for row in rows]

    assert in_own_loop(work()) == [2], "the failing write's first insert was undone with it"
    assert [s for s in statements if s.split()[0] in ("BEGIN", "COMMIT", "ROLLBACK")] == [
        "BEGIN IMMEDIATE",
        "COMMIT",
        "BEGIN IMMEDIATE",
        "ROLLBACK",
    ]
    assert not [s for s in statements if "SAVEPOINT" in s.upper()]


def test_urgent_work_goes_before_the_work_queued_and_its_writes_share_a_commit_of_their_own(
    tmp_path,
):
    # The coordinator's work is urgent: a claim of a send slot waits for the job running, not
    # for the page writes and paper saves queued before it.
    database = SqliteDatabase(tmp_path / "urgent.sqlite3")
    ran: list[str] = []
    statements: list[str] = []
    started, release = threading.Event(), threading.Event()

    def running(release: threading.Event) -> None:
        started.set()
        release.wait(10)

    def note(name: str) -> Callable[[sqlite3.Connection], None]:
        return lambda conn: ran.append(name)

    async def work():
        await database.open()
        await database.read(lambda conn: conn.set_trace_callback(statements.append))
        busy = asyncio.ensure_future(database.read(lambda conn: running(release)))
        await until(lambda: started.wait(30))  # running: what comes next waits in the queue
        queued = [
            asyncio.ensure_future(database.write(note("page 1"))),
            asyncio.ensure_future(database.write(note("page 2"))),
            asyncio.ensure_future(database.write(note("claim 1"), urgent=True)),
            asyncio.ensure_future(database.write(note("claim 2"), urgent=True)),
            asyncio.ensure_future(database.read(note("breaker"), urgent=True)),
            asyncio.ensure_future(database.write(note("page 3"))),
        ]
        await asyncio.sleep(0)  # handed in
        release.set()
        await asyncio.gather(busy, *queued)
        await database.read(lambda conn: conn.set_trace_callback(None))
        await database.close()

    in_own_loop(work())

    assert ran == ["claim 1", "claim 2", "breaker", "page 1", "page 2", "page 3"]
    assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
        "BEGIN IMMEDIATE",  # the two claims
        "COMMIT",
        "BEGIN IMMEDIATE",  # the three pages
        "COMMIT",
    ]


def test_stopping_serves_the_urgent_work_handed_in_first():
    worker = WorkerThread("lyra-test")
    ran: list[str] = []
    started, release = threading.Event(), threading.Event()

    async def work():
        busy = asyncio.ensure_future(worker.run(lambda: started.set() or release.wait(10)))
        await until(lambda: started.wait(30))  # running: what comes next waits in the queue
        queued = [
            asyncio.ensure_future(worker.run(lambda: ran.append("plain"))),
            asyncio.ensure_future(worker.run(lambda: ran.append("urgent"), urgent=True)),
        ]
        await asyncio.sleep(0)  # handed in
        stopping = asyncio.get_running_loop().run_in_executor(None, worker.stop)
        release.set()
        await asyncio.gather(busy, *queued, stopping)

    in_own_loop(work())
    assert ran == ["urgent", "plain"]


def test_writes_handed_in_while_another_process_holds_the_lock_go_in_with_the_waiting_one(
    tmp_path,
):
    # The writer asks for the queued writes once it holds the lock: while another process holds
    # it, the writes piling up behind the first go in its transaction, not one after another.
    statements, numbers = writes_behind_another_connection(
        tmp_path / "piled.sqlite3", lambda database: [database.write(insert(n)) for n in (2, 3)]
    )

    assert numbers == [1, 2, 3]
    # BEGIN IMMEDIATE is tried again and again while the other process holds the lock.
    assert statements.count("COMMIT") == 1
    assert statements.count("SAVEPOINT lyra_write") == 3


def test_a_write_with_reads_before_the_lock_makes_them_outside_any_transaction_then_its_own(
    tmp_path,
):
    # `before` runs on the worker outside any transaction, while another process may hold the
    # lock; its write opens a transaction of its own, which the writes queued after it join.
    in_a_transaction: list[bool] = []

    def read_ahead(conn: sqlite3.Connection) -> None:
        in_a_transaction.append(conn.in_transaction)
        conn.execute("SELECT 'ahead'")

    statements, numbers = writes_behind_another_connection(
        tmp_path / "before.sqlite3",
        lambda database: [
            database.write(insert(2), before=read_ahead),
            database.write(insert(3)),
        ],
    )

    assert numbers == [1, 2, 3]
    begins = [n for n, statement in enumerate(statements) if statement == "BEGIN IMMEDIATE"]
    ahead = statements.index("SELECT 'ahead'")
    assert in_a_transaction == [False]
    # The first write alone; the reads ahead after its commit, before the next transaction,
    # in which the third write joins the second.
    assert len(begins) == 2
    assert statements[begins[0] : ahead] == [
        "BEGIN IMMEDIATE",
        "INSERT INTO numbers VALUES (1)",
        "COMMIT",
    ]
    assert begins[1] == ahead + 1
    assert statements.count("SAVEPOINT lyra_write") == 2


def insert(n: int) -> Callable[[sqlite3.Connection], object]:
    return lambda conn: conn.execute("INSERT INTO numbers VALUES (?)", (n,))


async def until(happened: Callable[[], bool]) -> None:
    """Until `happened()` (which blocks until it has, or times out) says so, off the loop."""
    assert await asyncio.get_running_loop().run_in_executor(None, happened)


class Statements(list[str]):
    """The statements a connection ran (its trace callback: `append`), each as it starts."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = threading.Condition()

    def append(self, statement: str) -> None:
        with self._changed:
            super().append(statement)
            self._changed.notify_all()

    def tried(self, timeout_s: float = 30) -> bool:
        """Whether the connection has started to take the write lock (BEGIN IMMEDIATE)."""
        with self._changed:
            return self._changed.wait_for(lambda: "BEGIN IMMEDIATE" in self, timeout_s)


def writes_behind_another_connection(
    path: Path, later: Callable[[SqliteDatabase], list[Coroutine[Any, Any, Any]]]
) -> tuple[list[str], list[int]]:
    """While another connection holds SQLite's write lock, a first write (of 1) waits for it and
    the `later` writes are handed in behind it: the statements run, and the numbers written."""
    database = SqliteDatabase(path)
    statements = Statements()
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)

    async def work() -> list[int]:
        await database.open()
        await database.write(lambda conn: conn.execute("CREATE TABLE numbers (n)"))
        await database.read(lambda conn: conn.set_trace_callback(statements.append))
        other.execute("BEGIN IMMEDIATE")
        first = asyncio.ensure_future(database.write(insert(1)))
        # The worker now takes the lock with the first write, which the other holds.
        await until(statements.tried)
        handed_in = [asyncio.ensure_future(write) for write in later(database)]
        await asyncio.sleep(0)  # handed in
        other.execute("COMMIT")
        await asyncio.gather(first, *handed_in)
        await database.read(lambda conn: conn.set_trace_callback(None))
        rows = await database.read(lambda conn: conn.execute("SELECT n FROM numbers").fetchall())
        await database.close()
        return sorted(row[0] for row in rows)

    try:
        return statements, in_own_loop(work())
    finally:
        other.close()


def write_behind_the_file_lock(path: Path, hold_s: float = 0.0) -> tuple[float, float]:
    """A write to a new database at `path` while another holder keeps `<path>-lock` until the
    write waits for it, and `hold_s` more (the database closed after it): when the lock was let
    go, when the write was done."""
    database = SqliteDatabase(path)
    in_own_loop(database.open())
    lock = os.open(f"{path}-lock", os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    released_at: list[float] = []

    def let_go() -> None:
        wait_for_a_waiter_on(path)
        time.sleep(hold_s)  # how long the write waits is what is measured
        released_at.append(time.monotonic())
        fcntl.flock(lock, fcntl.LOCK_UN)

    holder = threading.Thread(target=let_go)
    holder.start()
    try:
        in_own_loop(database.write(lambda conn: conn.execute("CREATE TABLE t (x)")))
        written_at = time.monotonic()
    finally:
        holder.join()
        os.close(lock)
        in_own_loop(database.close())
    return released_at[0], written_at


def test_writers_of_two_processes_take_turns_on_the_file_lock(tmp_path, caplog):
    # Each write transaction holds `<file>-lock` (flock) from before BEGIN to after COMMIT: a
    # process holding it keeps every other lyra writer waiting, asleep in the kernel.
    path = tmp_path / "turns.sqlite3"
    released_at, written_at = write_behind_the_file_lock(path)
    assert written_at >= released_at, "the write waited for the file lock"
    assert query_db(path, "SELECT name FROM sqlite_master WHERE name = 't'")
    assert "waited" not in caplog.text, "a short wait is not worth a word"


def test_a_process_that_waited_long_for_others_writes_says_so_at_close(tmp_path, caplog):
    path = tmp_path / "contended.sqlite3"
    write_behind_the_file_lock(path, CONTENDED_MIN_S + 0.2)
    (line,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert re.search(rf"waited 2 s of the \d s it had {re.escape(str(path))} open for other", line)
    assert "LYRA_DB_URL, LYRA_COORDINATION_URL" in line


def test_a_write_waits_for_another_process_holding_the_lock_then_goes_on(tmp_path):
    path = tmp_path / "locked.sqlite3"
    database = SqliteDatabase(path)
    in_own_loop(database.open())
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")

    def let_go() -> None:
        time.sleep(0.3)  # the wait this makes is what is measured
        other.execute("COMMIT")

    holder = threading.Thread(target=let_go)
    holder.start()
    started = time.monotonic()
    try:
        in_own_loop(database.write(lambda conn: conn.execute("CREATE TABLE t (x)")))
        waited = time.monotonic() - started
    finally:
        holder.join()
        other.close()
        in_own_loop(database.close())
    assert waited >= 0.25, "it waited for the lock rather than failing"
    assert query_db(path, "SELECT name FROM sqlite_master WHERE name = 't'")
