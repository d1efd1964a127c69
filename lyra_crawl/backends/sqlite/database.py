"""One SQLite file: one connection, owned by one worker thread, WAL and a busy timeout.

Every statement runs on the worker thread (`read` and `write` hand it a function of the
connection), so no lock wait ever blocks the reactor. The connection is made on that thread
with sqlite3's default `check_same_thread`, so a statement from any other thread raises.
Writers take the write lock up front (BEGIN IMMEDIATE) so two processes never deadlock
upgrading read locks, and WAL lets readers go on while one writes. Several crawl processes
(Scrapyd jobs) share one file: their writers queue for `<file>-lock` (flock) in the kernel, which
wakes the next one the moment it is free; the writes queued while it waited then go in one
transaction (one savepoint each). A write lock held by another program is waited for by
SQLite's busy timeout.

The store's plans (backends.store) run here through `run_plan`: each statement's SQL, compiled
once (backends.dialects), goes straight to sqlite3. Opening brings the schema to the newest
version (backends.migrations) and marks `running` queries whose process is gone as
interrupted, in one transaction.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from lyra_crawl.backends import dialects
from lyra_crawl.backends.dialects import Plan, PlanRun, Step
from lyra_crawl.backends.sqlite.worker import Outcome, Work, WorkerThread
from lyra_crawl.backends.store import opening
from lyra_crawl.records import BackendError

T = TypeVar("T")
A = TypeVar("A")

logger = logging.getLogger(__name__)

DEFAULT_BUSY_TIMEOUT_S = 60.0
WORKER_THREAD = "lyra-sqlite"
LOCK_RETRY_S = 0.0002
# Waiting this share of the time a file was open, and this long, for other processes' writes
# is said at close, with the way out.
CONTENDED_SHARE = 0.25
CONTENDED_MIN_S = 2.0


class SqliteDatabase:
    def __init__(self, path: Path, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = path
        self.url = f"sqlite:///{path}"
        self._busy_timeout_s = busy_timeout_s
        self._worker = WorkerThread(WORKER_THREAD, group_runner=self._write_group)
        self._conn: sqlite3.Connection | None = None
        self._writer_lock: int | None = None
        self._opened_at = 0.0
        self._waited_s = 0.0  # for other processes' writes (worker thread only)

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        try:
            await self._run(self._open)
        except BaseException:
            self._worker.stop()
            raise

    async def close(self) -> None:
        if self._conn is not None:
            await self._run(self._close)
            self._say_if_contended(time.monotonic() - self._opened_at)
        self._worker.stop()

    def _say_if_contended(self, open_s: float) -> None:
        if self._waited_s >= max(CONTENDED_MIN_S, CONTENDED_SHARE * open_s):
            logger.warning(
                "this process waited %.0f s of the %.0f s it had %s open for other processes'"
                " writes to it (SQLite lets one process write at a time): for several crawls at"
                " once, a PostgreSQL store and Redis coordination let them write side by side"
                " (LYRA_DB_URL, LYRA_COORDINATION_URL)",
                self._waited_s,
                open_s,
                self.path,
            )

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._conn = sqlite3.connect(str(self.path), timeout=self._busy_timeout_s)
            self._writer_lock = os.open(f"{self.path}-lock", os.O_RDWR | os.O_CREAT, 0o644)
            conn.isolation_level = None  # transactions are explicit: BEGIN IMMEDIATE … COMMIT
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
            # Turning WAL on takes the file whole; SQLite's busy handler is not asked then, so
            # processes opening a new file at once would get "database is locked".
            self._when_unlocked(conn, "PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            # 32 MiB of pages (SQLite's default: 2 MiB): a save of a query's papers reads and
            # writes the paper index's blocks all over their B-tree (100 saves of 1,000
            # synthetic papers: ~2 s less).
            conn.execute("PRAGMA cache_size = -32768")
            # A checkpoint every 8,000 pages of the log (SQLite's default: 1,000): a save of a
            # query's papers changes thousands of pages of the paper index's B-trees, which the
            # default copies into the file at nearly every commit; every few saves instead, a
            # page changed by several is copied once (100 saves of 1,000 synthetic papers and
            # their pages: the commits' CPU 3.0 s -> 2.3 s).
            conn.execute("PRAGMA wal_autocheckpoint = 8000")
            conn.execute("PRAGMA foreign_keys = ON")
            with self._transaction():
                run_plan(conn, opening(dialects.SQLITE, f"database {self.path}"))
            self._opened_at = time.monotonic()
        except (OSError, sqlite3.Error) as exc:
            self._close()
            raise BackendError(
                f"cannot open database {self.path} ({exc}): check that the folder is writable "
                "or set LYRA_DB_URL (or LYRA_DB_PATH) to another file"
            ) from exc

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._writer_lock is not None:
            os.close(self._writer_lock)
            self._writer_lock = None

    # -- running statements on the worker ----------------------------------------------------

    def _open_worker(self) -> WorkerThread:
        if self._worker.stopped:
            raise BackendError(f"database {self.path} is closed")
        return self._worker

    async def _run(self, work: Callable[[], T]) -> T:
        return await self._open_worker().run(work)

    async def read(self, work: Callable[[sqlite3.Connection], T], *, urgent: bool = False) -> T:
        """`work(connection)` on the worker thread, outside any transaction; an `urgent` one
        before the queued work that is not (the coordinator's, which requests wait for)."""
        return await self._open_worker().run(lambda: work(self._connection()), urgent=urgent)

    async def write(
        self,
        work: Callable[[sqlite3.Connection], T],
        *,
        before: Callable[[sqlite3.Connection], object] | None = None,
        urgent: bool = False,
    ) -> T:
        """`work(connection)` on the worker thread in a BEGIN IMMEDIATE transaction, shared with
        the writes as urgent as it queued beside it (`_write_group`; an `urgent` one goes
        before the queued work that is not). With `before`, the transaction is the write's own
        (with the writes queued after it), and `before(connection)` runs first, outside any
        transaction, before the write lock is taken: reads that need not hold the lock, so
        `work` must check that what they read still holds (other processes write
        meanwhile)."""
        return await self._open_worker().run_grouped(
            lambda: work(self._connection()),
            before=None if before is None else lambda: before(self._connection()),
            urgent=urgent,
        )

    async def run_read(self, plan: Plan[T]) -> T:
        return await self.read(lambda conn: run_plan(conn, plan))

    async def run_write(self, plan: Plan[T]) -> T:
        return await self.write(lambda conn: run_plan(conn, plan))

    async def run_write_after(self, ahead: Plan[A], then: Callable[[A], Plan[T]]) -> T:
        """`ahead` outside any transaction, before the write lock is taken; then `then(its
        result)` in a write transaction of its own (`write(…, before=…)`)."""
        read: list[A] = []
        return await self.write(
            lambda conn: run_plan(conn, then(read.pop())),
            before=lambda conn: read.append(run_plan(conn, ahead)),
        )

    def in_transaction(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(connection)` in one BEGIN IMMEDIATE transaction; on the worker thread only."""
        with self._transaction() as conn:
            return work(conn)

    def _write_group(self, first: Work, more: Callable[[], list[Work]]) -> list[Outcome]:
        """`first` and the writes queued by the time the write lock is held (`more`), in one
        transaction: one lock taken and one commit for all.

        Each runs in its own savepoint, so one that fails is undone alone and gets its own
        error, as in a transaction of its own; a failed commit fails them all. A write alone is
        a transaction of its own, without a savepoint: that would copy each page it changes to
        the savepoint's journal first (a save of a query's papers changes thousands).
        """
        with self._transaction() as conn:
            writes = [first, *more()]
            if len(writes) == 1:
                return [(first(), None)]
            outcomes: list[Outcome] = []
            for write in writes:
                conn.execute("SAVEPOINT lyra_write")
                try:
                    outcomes.append((write(), None))
                except Exception as exc:
                    conn.execute("ROLLBACK TO lyra_write")
                    outcomes.append((None, self._write_error(exc)))
                conn.execute("RELEASE lyra_write")
        return outcomes

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise BackendError(f"database {self.path} is closed")
        return self._conn

    def _when_unlocked(self, conn: sqlite3.Connection, statement: str) -> None:
        """Run `statement`, trying again every LOCK_RETRY_S while another connection holds
        the lock it needs, up to the busy timeout."""
        deadline = time.monotonic() + self._busy_timeout_s
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            while True:
                try:
                    conn.execute(statement)
                    return
                except sqlite3.OperationalError as exc:
                    busy = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY  # also BUSY_RECOVERY…
                    if not busy or time.monotonic() > deadline:
                        raise
                time.sleep(LOCK_RETRY_S)
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error.

        A write SQLite refuses (disk full, read-only file or folder) is a BackendError naming
        the path and the fix; a constraint failure stays an sqlite3.IntegrityError.
        """
        conn = self._connection()
        assert self._writer_lock is not None
        # Writers of every lyra process queue for the file's lock in the kernel, which wakes
        # the next one as soon as it is free. SQLite's own busy handler, which sleeps 1, 2, 5,
        # 10… ms between tries, then waits only for other programs: between two crawls on one
        # file it kept both asleep a third of the time.
        try:
            fcntl.flock(self._writer_lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            started = time.monotonic()
            fcntl.flock(self._writer_lock, fcntl.LOCK_EX)
            self._waited_s += time.monotonic() - started
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                # A full disk can refuse even the rollback; SQLite then rolls back on next open.
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            error = self._write_error(exc)
            if error is exc:
                raise
            raise error from exc
        finally:
            fcntl.flock(self._writer_lock, fcntl.LOCK_UN)

    def _write_error(self, exc: BaseException) -> BaseException:
        """A write SQLite refuses as a BackendError naming the fix; any other error as it is."""
        if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
            return BackendError(
                f"cannot write to {self.path} ({exc}): check free disk space and that the "
                "file and its folder are writable, or set LYRA_DB_URL (or LYRA_DB_PATH) to "
                "another file"
            )
        return exc


def run_plan(conn: sqlite3.Connection, plan: Plan[T]) -> T:
    """Run `plan`'s statements on `conn`, each answer handed back to it; its result."""
    running = PlanRun(plan, dialects.SQLITE)
    for compiled, step in running:
        running.answer = _run_step(conn, compiled, step)
    return running.result


def _run_step(conn: sqlite3.Connection, compiled: dialects.Compiled, step: Step) -> Any:
    if step.many:
        return conn.executemany(compiled.sql, map(compiled.bind, step.params)).rowcount
    cursor = conn.execute(compiled.sql, compiled.bind(step.params))
    if step.answer == dialects.COUNT:
        return cursor.rowcount
    if step.answer == dialects.VALUE:
        row = cursor.fetchone()
        return None if row is None else row[0]
    return cursor.fetchone() if step.answer == dialects.FIRST else cursor.fetchall()


class SqliteBackend:
    """What the store and the coordinator share: their database, its URL, closing it."""

    def __init__(self, database: SqliteDatabase) -> None:
        self._db = database

    @property
    def url(self) -> str:
        return self._db.url

    async def close(self) -> None:
        await self._db.close()
