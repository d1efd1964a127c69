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

Opening applies schema.sql (tables, indexes, and columns added since an older file was made),
then what each newer schema version needs beyond them (`_UPGRADE_STEPS`; version 3: the paper
index's blocks, the records kept for matching and every paper's evidence; version 4, the
citation graph's tables, and 5, the landing pages', nothing more; version 6: the author and
venue words of every stored paper's records and its kept titles normalised; version 7: the
blocks keyed by the hash of their key rather than its text), and marks
`running` queries whose process is gone as interrupted.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from lyra_crawl.backends.paper_saving import (
    PAPER_JSON_COLUMNS,
    UPGRADED_COLUMNS,
    block_hash,
    upgrade_matching,
    upgrade_to_index,
)
from lyra_crawl.backends.records import BackendError
from lyra_crawl.backends.rows import process_alive, utc_now
from lyra_crawl.backends.sqlite.worker import Outcome, Work, WorkerThread

T = TypeVar("T")

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 7
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
            conn.execute("PRAGMA foreign_keys = ON")
            self._apply_schema(conn)
            self._mark_dead_crawls_interrupted(conn)
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

    async def select(
        self, convert: Callable[[sqlite3.Row], T], sql: str, params: Sequence[Any] = ()
    ) -> list[T]:
        """Every row `sql` selects, each converted to its record."""
        return await self.read(lambda conn: [convert(row) for row in conn.execute(sql, params)])

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

    # -- opening: schema and interrupted crawls ----------------------------------------------

    def _apply_schema(self, conn: sqlite3.Connection) -> None:
        """Create what is missing: tables, indexes, and columns added since the file was made."""
        schema = resources.files(__package__).joinpath("schema.sql").read_text("utf-8")
        # Columns first: the schema's indexes may name a column an old table lacks.
        with self._transaction():
            for table, column, declaration in _missing_columns(conn, schema):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        conn.executescript(schema)
        with self._transaction():
            version = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0]
            if version is None:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            elif version < SCHEMA_VERSION:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    if step in _UPGRADE_STEPS:
                        _UPGRADE_STEPS[step](conn)
                conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))

    def _mark_dead_crawls_interrupted(self, conn: sqlite3.Connection) -> None:
        """Mark `running` queries whose process is gone (killed, crashed) as interrupted."""
        rows = conn.execute(
            "SELECT id, pid FROM queries WHERE status = 'running' AND pid IS NOT NULL"
        ).fetchall()
        dead = [row["id"] for row in rows if not process_alive(row["pid"])]
        if dead:
            with self._transaction():
                conn.executemany(
                    "UPDATE queries SET status = 'interrupted', finished_at = ?"
                    " WHERE id = ? AND status = 'running'",
                    [(utc_now(), query_id) for query_id in dead],
                )


def _upgrade(conn: sqlite3.Connection) -> None:
    """Version 3: papers stored before the paper index get its blocks, the records kept for
    matching and their evidence."""
    upgrade = upgrade_to_index(conn.execute("SELECT * FROM papers"))
    conn.executemany(
        "INSERT OR IGNORE INTO paper_index_blocks (block_hash, paper_id) VALUES (?, ?)",
        [(block_hash(key), paper_id) for key, paper_id in upgrade.blocks],
    )
    conn.executemany(
        f"UPDATE papers SET {', '.join(f'{c} = ?' for c in UPGRADED_COLUMNS)} WHERE id = ?",
        [
            (
                *(
                    json.dumps(values[c]) if c in PAPER_JSON_COLUMNS else values[c]
                    for c in UPGRADED_COLUMNS
                ),
                paper_id,
            )
            for paper_id, values in upgrade.rows
        ],
    )


def _upgrade_matching(conn: sqlite3.Connection) -> None:
    """Version 6: stored papers' author and venue words, and their kept titles normalised (what
    a save reads first of its candidates; once compact)."""
    upgrade = upgrade_matching(conn.execute("SELECT * FROM papers"))
    conn.executemany("INSERT OR IGNORE INTO paper_words (word, kind) VALUES (?, ?)", upgrade.words)
    conn.executemany("UPDATE papers SET match_titles = ? WHERE id = ?", upgrade.titles)


def _hash_blocks(conn: sqlite3.Connection) -> None:
    """Version 7: the blocks of a store indexed before it (`paper_blocks`, by the text of their
    key) into `paper_index_blocks`, by its hash; the old table goes."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'paper_blocks'").fetchone() is None:
        return  # upgraded from before the index: version 3 filled the new table
    conn.create_function("block_hash", 1, block_hash, deterministic=True)
    conn.execute(
        "INSERT OR IGNORE INTO paper_index_blocks (block_hash, paper_id)"
        " SELECT block_hash(block_key), paper_id FROM paper_blocks"
    )
    conn.execute("DROP TABLE paper_blocks")


# What a version needs beyond the tables and columns the schema script adds, run in order
# (version 4, the citation graph, and version 5, the papers spider's landing pages, need
# nothing more).
_UPGRADE_STEPS: dict[int, Callable[[sqlite3.Connection], None]] = {
    3: _upgrade,
    6: _upgrade_matching,
    7: _hash_blocks,
}


def _missing_columns(conn: sqlite3.Connection, schema: str) -> list[tuple[str, str, str]]:
    """Columns schema.sql declares that the file's tables lack (a database from an older
    version): (table, column, declaration to add it with)."""
    reference = sqlite3.connect(":memory:")
    try:
        reference.executescript(schema)
        tables = [
            row[0]
            for row in reference.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        missing = []
        for table in tables:
            present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            if not present:
                continue  # a table the file lacks altogether: the schema script creates it
            for _, name, kind, notnull, default, _ in reference.execute(
                f"PRAGMA table_info({table})"
            ):
                if name not in present:
                    declaration = f"{kind}{' NOT NULL' if notnull else ''}"
                    if default is not None:
                        declaration += f" DEFAULT {default}"
                    missing.append((table, name, declaration))
        return missing
    finally:
        reference.close()


class SqliteBackend:
    """What the store and the coordinator share: their database, its URL, closing it."""

    def __init__(self, database: SqliteDatabase) -> None:
        self._db = database

    @property
    def url(self) -> str:
        return self._db.url

    async def close(self) -> None:
        await self._db.close()
