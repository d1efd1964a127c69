"""One PostgreSQL database (psycopg 3, asyncio): a small connection pool, the schema, errors.

A pool rather than one AsyncConnection: one crawl process runs many queries at once, each
storing pages, papers and batch entries in transactions of its own; one connection would run
them one after another (psycopg serialises a connection's commands) and a transaction of one
task could not be kept apart from another's. The pool lends each transaction a connection of
its own and reconnects after the server comes back. Every timestamp is the server's clock
(`now()`, `clock_timestamp()`), so leases and times agree across machines whatever their
clocks say; timestamptz values are read back as the text records carry (rows.instant).

Opening connects once directly (an unreachable server is then one clear error, not a pool
timeout), applies the schema version under an advisory lock so several nodes opening at once
do not race (an empty database gets schema.sql; an older version is upgraded step by step:
upgrade_<version>.sql, then that version's Python step; a newer one is refused), marks this
host's `running` queries whose process is gone as interrupted, then opens the pool. Connection
failures, at open or later, are BackendErrors naming the URL without its password and the fix;
constraint failures stay psycopg.IntegrityError.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg.rows import DictRow, dict_row
from psycopg.types.datetime import TimestamptzLoader
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from lyra_crawl.backends import redact_url
from lyra_crawl.backends.paper_saving import (
    PAPER_JSON_COLUMNS,
    UPGRADED_COLUMNS,
    upgrade_matching,
    upgrade_to_index,
)
from lyra_crawl.backends.records import BackendError
from lyra_crawl.backends.rows import instant, process_alive

T = TypeVar("T")

SCHEMA_VERSION = 7
# pg_advisory_xact_lock key of the schema's application: "lyra" in ASCII.
SCHEMA_LOCK = 0x6C797261
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
        self._password = _password(url)
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
                await self._apply_schema(conn)
                await _mark_dead_crawls_interrupted(conn)
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

    async def select(
        self, convert: Callable[[DictRow], T], sql: str, params: Sequence[Any] = ()
    ) -> list[T]:
        """Every row `sql` selects, each converted to its record."""
        async with self.transaction() as conn:
            cursor = conn.cursor(row_factory=dict_row)
            await cursor.execute(sql, params)
            return [convert(row) for row in await cursor.fetchall()]

    async def value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row `sql` selects, or None."""
        async with self.transaction() as conn:
            row = await (await conn.execute(sql, params)).fetchone()
            return None if row is None else row[0]

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
        text = text.removeprefix("FATAL:").strip()
        if self._password:
            text = text.replace(self._password, "***")
        return text[:1].lower() + text[1:]

    async def _apply_schema(self, conn: Connection) -> None:
        """Create the tables of SCHEMA_VERSION in an empty database, upgrade an older version
        to it; refuse a newer one."""
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            found = await (await conn.execute("SELECT to_regclass('schema_version')")).fetchone()
            if found is None or found[0] is None:
                await conn.execute(_sql("schema.sql"))
                await conn.execute(
                    "INSERT INTO schema_version (version) VALUES (%s)", (SCHEMA_VERSION,)
                )
                return
            row = await (await conn.execute("SELECT MAX(version) FROM schema_version")).fetchone()
            version = None if row is None else row[0]
            if isinstance(version, int) and version < SCHEMA_VERSION:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    await conn.execute(_sql(f"upgrade_{step}.sql"))
                    if step in _UPGRADE_STEPS:
                        await _UPGRADE_STEPS[step](conn)
                await conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))
            elif version != SCHEMA_VERSION:
                raise BackendError(
                    f"{SETTING} {self.url} holds lyra schema version {version}, this lyra_crawl "
                    f"knows version {SCHEMA_VERSION}: use the lyra_crawl release that made it, "
                    "or another database"
                )


def _sql(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text("utf-8")


async def _index_stored_papers(conn: Connection) -> None:
    """Version 2: papers stored before the paper index get its blocks, the records kept for
    matching and their evidence."""
    cursor = conn.cursor(row_factory=dict_row)
    await cursor.execute("SELECT * FROM papers")
    upgrade = upgrade_to_index(await cursor.fetchall())
    await cursor.executemany(
        "INSERT INTO paper_blocks (block_key, paper_id) VALUES (%s, %s)", upgrade.blocks
    )
    await cursor.executemany(
        f"UPDATE papers SET {', '.join(f'{c} = %s' for c in UPGRADED_COLUMNS)} WHERE id = %s",
        [
            (
                *(
                    Jsonb(values[c]) if c in PAPER_JSON_COLUMNS else values[c]
                    for c in UPGRADED_COLUMNS
                ),
                paper_id,
            )
            for paper_id, values in upgrade.rows
        ],
    )


async def _upgrade_matching(conn: Connection) -> None:
    """Version 5: stored papers' author and venue words, and their kept titles normalised (what
    a save reads first of its candidates; once compact)."""
    cursor = conn.cursor(row_factory=dict_row)
    await cursor.execute("SELECT * FROM papers")
    upgrade = upgrade_matching(await cursor.fetchall())
    await cursor.executemany(
        "INSERT INTO paper_words (word, kind) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        upgrade.words,
    )
    await cursor.executemany("UPDATE papers SET match_titles = %s WHERE id = %s", upgrade.titles)


# What a version needs beyond its upgrade_<version>.sql, run after it (version 3, the citation
# graph, 4, the papers spider's landing pages, and 6, the blocks keyed by hash, need nothing
# more).
_UPGRADE_STEPS: dict[int, Callable[[Connection], Awaitable[None]]] = {
    2: _index_stored_papers,
    5: _upgrade_matching,
}


async def _mark_dead_crawls_interrupted(conn: Connection) -> None:
    """Mark this host's `running` queries whose process is gone (killed, crashed) as
    interrupted; other hosts' crawls are theirs to judge."""
    async with conn.transaction():
        found = await (
            await conn.execute(
                "SELECT id, pid FROM queries WHERE status = 'running' AND host = %s"
                " AND pid IS NOT NULL",
                (socket.gethostname(),),
            )
        ).fetchall()
        dead = [query_id for query_id, pid in found if not process_alive(pid)]
        if dead:
            await conn.execute(
                "UPDATE queries SET status = 'interrupted', finished_at = now()"
                " WHERE id = ANY(%s) AND status = 'running'",
                (dead,),
            )


def _password(url: str) -> str | None:
    try:
        return urlsplit(url).password
    except ValueError:
        return None
