"""The worker thread every SQLite statement runs on: answers and errors come back to the asking
loop, in order; stopping lets handed-in work finish; work in flight at exit still completes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lyra_crawl.backends.records import BackendError
from lyra_crawl.backends.sqlite.database import SqliteDatabase
from lyra_crawl.backends.sqlite.worker import WorkerThread
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


def test_stopping_lets_handed_in_work_finish_then_refuses_more():
    worker = WorkerThread("lyra-test")

    async def work():
        slow = asyncio.ensure_future(worker.run(lambda: time.sleep(0.05) or "finished"))
        await asyncio.sleep(0)  # handed in
        await asyncio.get_running_loop().run_in_executor(None, worker.stop)
        with pytest.raises(RuntimeError, match="stopped"):
            await worker.run(lambda: None)
        return await slow

    assert in_own_loop(work()) == "finished"
    worker.stop()  # a second stop does nothing


def test_a_closed_database_says_so(tmp_path):
    database = SqliteDatabase(tmp_path / "db.sqlite3")

    async def work():
        await database.open()
        await database.close()
        await database.read(lambda conn: None)

    with pytest.raises(BackendError, match="is closed"):
        in_own_loop(work())


EXITS_WITH_A_WRITE_IN_FLIGHT = """
import asyncio, sys, time
from pathlib import Path
from lyra_crawl.backends.sqlite.database import SqliteDatabase

async def main():
    database = SqliteDatabase(Path(sys.argv[1]))
    await database.open()
    def slow_write(conn):
        time.sleep(0.3)
        conn.execute("INSERT INTO engine_usage (engine, date, usage_count) VALUES ('e', 'd', 7)")
    asyncio.ensure_future(database.write(slow_write))
    await asyncio.sleep(0.05)  # the write has started; the loop ends without waiting for it

asyncio.run(main())
"""


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
