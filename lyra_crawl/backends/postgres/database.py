"""One PostgreSQL database (psycopg 3, asyncio): a small connection pool, the schema, errors.

A pool rather than one AsyncConnection: one crawl process runs many queries at once, each
storing pages, papers and batch entries in transactions of its own; one connection would run
them one after another (psycopg serialises a connection's commands) and a transaction of one
task could not be kept apart from another's. The pool lends each transaction a connection of
its own and reconnects after the server comes back. Every timestamp is the server's clock
(`now()`, `clock_timestamp()`), so leases and times agree across machines whatever their
clocks say; timestamptz values are read back as the text records carry (rows.instant).

The store's plans (backends.store) run here through `run_plan`, each one transaction on a
pooled connection: each statement's SQL, compiled once (backends.dialects), goes straight to
psycopg. Opening connects once directly (an unreachable server is then one clear error, not a
pool timeout) and runs the store's opening there (backends.migrations: the schema brought to the
newest version under an advisory lock, so nodes opening at once do not race; this host's dead
crawls interrupted), then opens the pool. Connection failures, at open or later, are
BackendErrors naming the URL without its password and the fix; constraint failures stay
psycopg.IntegrityError.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import psycopg
from psycopg.rows import dict_row, tuple_row
from psycopg.types.datetime import TimestamptzLoader
from psycopg_pool import AsyncConnectionPool

from lyra_crawl.backends import dialects
from lyra_crawl.backends.dialects import Plan, PlanRun, Step
from lyra_crawl.backends.rows import instant
from lyra_crawl.backends.store import opening
from lyra_crawl.quoting import redact_url, without_password
from lyra_crawl.records import BackendError

T = TypeVar("T")
A = TypeVar("A")

CONNECT_TIMEOUT_S = 10
POOL_MIN_SIZE = 1
POOL_MAX_SIZE = 4
SETTING = "LYRA_DB_URL"

Connection = psycopg.AsyncConnection[Any]


class _InstantLoader(TimestamptzLoader):
    """timestamptz as the text every record carries (UTC, ISO 8601, milliseconds)."""

    def load(self, data: Any) -> str:
        return instant(super().load(data))


async def _configure(conn: Connection) -> None:
    conn.adapters.register_loader("timestamptz", _InstantLoader)


class PostgresDatabase:
    def __init__(self, url: str) -> None:
        self._conninfo = url
        self.url = redact_url(url)
        self._pool: AsyncConnectionPool[Connection] | None = None

    async def open(self) -> None:
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._conninfo, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.OperationalError as exc:
            raise BackendError(
                f"{SETTING} {self.url} is unreachable ({self._reason(exc)}): start PostgreSQL "
                "there or fix the URL"
            ) from exc
        except psycopg.ProgrammingError as exc:  # a URL libpq cannot read
            raise BackendError(
                f"{SETTING} {self.url} is not a PostgreSQL URL ({self._reason(exc)}): "
                "use postgresql://user:password@host:port/database"
            ) from exc
        async with self._failures():
            try:
                await _configure(conn)
                async with conn.transaction():
                    await run_plan(conn, opening(dialects.POSTGRESQL, f"{SETTING} {self.url}"))
            finally:
                await conn.close()
            pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
                self._conninfo,
                min_size=POOL_MIN_SIZE,
                max_size=POOL_MAX_SIZE,
                kwargs={"connect_timeout": CONNECT_TIMEOUT_S},
                configure=_configure,
                name="lyra-store",
                open=False,
            )
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
            self._pool = pool

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A pooled connection in one transaction: committed at the end, rolled back on error."""
        if self._pool is None:
            raise BackendError(f"{SETTING} {self.url} is closed")
        async with self._failures(), self._pool.connection() as conn:
            yield conn

    async def run_read(self, plan: Plan[T]) -> T:
        async with self.transaction() as conn:
            return await run_plan(conn, plan)

    run_write = run_read

    async def run_write_after(self, ahead: Plan[A], then: Callable[[A], Plan[T]]) -> T:
        """`ahead` in a transaction of its own, then `then(its result)` in another."""
        return await self.run_write(then(await self.run_read(ahead)))

    @asynccontextmanager
    async def _failures(self) -> AsyncIterator[None]:
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            raise BackendError(
                f"{SETTING} {self.url} failed ({self._reason(exc)}): check that PostgreSQL is "
                "running and reachable there"
            ) from exc

    def _reason(self, exc: BaseException) -> str:
        """The cause libpq or the server gave, in short, never the password."""
        lines = str(exc).strip().splitlines()
        # libpq: 'connection failed: connection to server at "h", port p failed: <cause>'
        text = lines[0].rpartition(" failed: ")[2] if lines else type(exc).__name__
        text = without_password(text.removeprefix("FATAL:").strip(), self._conninfo)
        return text[:1].lower() + text[1:]


async def run_plan(conn: Connection, plan: Plan[T]) -> T:
    """Run `plan`'s statements on `conn`, each answer handed back to it; its result."""
    running = PlanRun(plan, dialects.POSTGRESQL)
    for compiled, step in running:
        running.answer = await _run_step(conn, compiled, step)
    return running.result


async def _run_step(conn: Connection, compiled: dialects.Compiled, step: Step) -> Any:
    if step.many:
        cursor = conn.cursor()
        await cursor.executemany(compiled.sql, [compiled.bind(p) for p in step.params])
        return cursor.rowcount
    named = step.answer in (dialects.ROWS, dialects.FIRST)
    cursor = conn.cursor(row_factory=dict_row if named else tuple_row)
    await cursor.execute(compiled.sql, compiled.bind(step.params))
    if step.answer == dialects.COUNT:
        return cursor.rowcount
    if step.answer == dialects.VALUE:
        row = await cursor.fetchone()
        return None if row is None else row[0]
    return await cursor.fetchone() if step.answer == dialects.FIRST else await cursor.fetchall()
