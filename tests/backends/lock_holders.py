"""Another process holding the lock a store's paper saves take, for tests: it sees a save
wait for the lock (`waited_for`), writes an abstract meanwhile as record_landing_page does
(`write_abstract`), and reads the paper index's generation. SQLite: the file's write lock
(`<file>-lock`); PostgreSQL: the papers lock."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import psycopg

from lyra_crawl.backends.statements import NEXT_GENERATION, PAPER_FROM_LANDING, PAPERS_LOCK_KEY
from tests.conftest import query_db


class FileLockHolder:
    """Another process writing to the SQLite file at `path`: it holds `<path>-lock`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = -1

    def __enter__(self) -> FileLockHolder:
        self._lock = os.open(f"{self.path}-lock", os.O_RDWR)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._lock, fcntl.LOCK_UN)
        os.close(self._lock)

    async def waited_for(self) -> None:
        await asyncio.to_thread(wait_for_a_waiter_on, self.path)

    async def write_abstract(self, paper_id: int, abstract: str) -> None:
        with closing(sqlite3.connect(self.path, isolation_level=None)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            written = {"paper_abstract": abstract, "paper_id": paper_id}
            conn.execute(PAPER_FROM_LANDING.sqlite.sql, PAPER_FROM_LANDING.sqlite.bind(written))
            conn.execute(NEXT_GENERATION.sqlite.sql)
            conn.execute("COMMIT")

    def generation(self) -> int:
        return query_db(self.path, "SELECT generation FROM paper_index_generation")[0][0]


class PapersLockHolder:
    """Another node saving papers into the PostgreSQL database at `url`: it holds the papers
    lock."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._conn: psycopg.Connection | None = None

    def __enter__(self) -> PapersLockHolder:
        self._conn = psycopg.connect(self.url, autocommit=True)
        self._conn.execute("SELECT pg_advisory_lock(%s)", (PAPERS_LOCK_KEY,))
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._conn is not None
        self._conn.execute("SELECT pg_advisory_unlock(%s)", (PAPERS_LOCK_KEY,))
        self._conn.close()

    async def waited_for(self) -> None:
        assert self._conn is not None
        await waiting_for_an_advisory_lock(self._conn)

    async def write_abstract(self, paper_id: int, abstract: str) -> None:
        assert self._conn is not None
        with self._conn.transaction():
            written = {"paper_abstract": abstract, "paper_id": paper_id}
            self._conn.execute(PAPER_FROM_LANDING.postgresql.sql, written)
            self._conn.execute(NEXT_GENERATION.postgresql.sql)

    def generation(self) -> int:
        with psycopg.connect(self.url) as conn:
            return conn.execute("SELECT generation FROM paper_index_generation").fetchone()[0]


def wait_for_a_waiter_on(path: Path, timeout_s: float = 10) -> None:
    """Until a process waits for the write lock of the database at `path` (/proc/locks)."""
    inode = f":{os.stat(f'{path}-lock').st_ino} "
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open("/proc/locks") as locks:
            if any("-> FLOCK" in line and inode in line for line in locks):
                return
        time.sleep(0.01)
    raise AssertionError(f"nobody waited for {path}-lock")


async def waiting_for_an_advisory_lock(conn: psycopg.Connection, timeout_s: float = 10) -> None:
    """Until a session waits for an advisory lock of the server `conn` is connected to."""
    for _ in range(int(timeout_s / 0.01)):
        waiting = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
        if waiting == (1,):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("nobody waited for the papers lock")
