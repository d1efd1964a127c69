"""Backends: where results are kept and what crawls coordinate through. Only this package
speaks SQL.

The protocols are in protocols.py, the records they exchange in records.py. `open_backends`
opens the ResultStore named by LYRA_DB_URL (a SQLite file, or PostgreSQL) and the Coordinator
named by LYRA_COORDINATION_URL (default: the same SQLite file, one connection then serving both;
with a PostgreSQL store, the default SQLite file). LYRA_DB_PATH, a plain file path, is the older
spelling of LYRA_DB_URL.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import parse_qs, urlsplit

from lyra_crawl.backends.protocols import Coordinator, ResultStore
from lyra_crawl.backends.sqlite import SqliteCoordinator, SqliteDatabase
from lyra_crawl.backends.sqlite.release_signals import ReleaseSignals
from lyra_crawl.backends.store import SqlStore
from lyra_crawl.quoting import redact_url, show
from lyra_crawl.records import BackendError

T = TypeVar("T")

DEFAULT_DB_URL = "sqlite:///data/lyra.sqlite3"
SQLITE_PREFIX = "sqlite:///"
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
REDIS_SCHEMES = ("redis://", "rediss://")
DEFAULT_PORTS = {"postgresql": 5432, "redis": 6379, "rediss": 6379}


@dataclass(frozen=True)
class BackendUrls:
    store: str
    coordination: str


class Closeable(Protocol):
    async def close(self) -> None: ...


@dataclass(frozen=True)
class Backends:
    """The process's two backends; `close` closes each underlying connection once."""

    store: ResultStore
    coordinator: Coordinator
    connections: tuple[Closeable, ...]

    async def close(self) -> None:
        for connection in reversed(self.connections):
            await connection.close()


def urls_from_settings(settings: Mapping[str, Any] | Any) -> BackendUrls:
    """LYRA_DB_URL (or LYRA_DB_PATH) and LYRA_COORDINATION_URL from Scrapy settings or a dict."""
    db_url = settings.get("LYRA_DB_URL") or None
    db_path = settings.get("LYRA_DB_PATH") or None
    if db_url and db_path and _resolved(sqlite_path(db_url)) != _resolved(Path(db_path)):
        raise BackendError(
            f"LYRA_DB_URL ({redact_url(db_url)}) and LYRA_DB_PATH ({db_path}) name different "
            "databases: set only LYRA_DB_URL"
        )
    store = db_url or (sqlite_url(db_path) if db_path else DEFAULT_DB_URL)
    # PostgreSQL holds results only: coordination then stays in the embedded default file
    # unless LYRA_COORDINATION_URL names another place.
    default_coordination = store if store.startswith(SQLITE_PREFIX) else DEFAULT_DB_URL
    return BackendUrls(
        store=store, coordination=settings.get("LYRA_COORDINATION_URL") or default_coordination
    )


def _resolved(path: Path | None) -> Path | None:
    return None if path is None else path.resolve()


def sqlite_url(path: str | os.PathLike[str]) -> str:
    return f"{SQLITE_PREFIX}{path}"


def sqlite_path(url: str) -> Path | None:
    """The file a sqlite:/// URL names (relative after three slashes, absolute after four)."""
    return Path(url[len(SQLITE_PREFIX) :]) if url.startswith(SQLITE_PREFIX) else None


def absolute_url(url: str) -> str:
    """`url` with a relative SQLite path made absolute (Scrapyd runs jobs elsewhere)."""
    path = sqlite_path(url)
    return sqlite_url(path.resolve()) if path is not None else url


def backend_target(url: str) -> str:
    """Where `url` points, without its user and password: scheme, host, port and database (for
    SQLite the absolute file), spelled alike for two URLs that name the same place. What a
    Scrapyd job may be told of its store and coordinator (Scrapyd logs job arguments)."""
    if sqlite_path(url) is not None:
        return absolute_url(url)
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return redact_url(url)
    # libpq and redis-py also read these from the query (`?host=/run/postgresql`, `?db=2`).
    options = {name: values[0] for name, values in parse_qs(parts.query).items()}
    if url.startswith(POSTGRES_PREFIXES):
        scheme = "postgresql"
        host = options.get("host", host)
        port = options.get("port", port)
        # libpq's default database is the user's name.
        database = options.get("dbname") or parts.path.lstrip("/") or parts.username or ""
    elif url.startswith(REDIS_SCHEMES):
        scheme = parts.scheme
        database = parts.path.lstrip("/") or options.get("db") or "0"
    else:
        return redact_url(url)
    target = f"{scheme}://{{}}:{port or DEFAULT_PORTS[scheme]}/{database}"
    if host.startswith("/"):  # a Unix socket's folder, given as libpq takes it
        return f"{target.format('')}?host={host}"
    return target.format(f"[{host}]" if ":" in host else host)  # IPv6 keeps its brackets


async def open_backends(urls: BackendUrls) -> Backends:
    """The store and coordinator the URLs name, opened; one SQLite file serves both when the
    two URLs name the same file."""
    opener = _Opener()
    try:
        store = await opener.store(urls.store)
        coordinator = await opener.coordinator(urls.coordination)
    except BaseException:
        await opener.close_all()
        raise
    return Backends(store, coordinator, tuple(opener.opened))


class _Opener:
    """Opens each backend a URL names, remembering what to close."""

    def __init__(self) -> None:
        self.opened: list[Closeable] = []
        self._sqlite: dict[Path, SqliteDatabase] = {}

    async def store(self, url: str) -> ResultStore:
        if url.startswith(SQLITE_PREFIX):
            return SqlStore(await self._sqlite_database(url, "LYRA_DB_URL"))
        if url.startswith(POSTGRES_PREFIXES):
            # Imported here: psycopg is loaded only by processes that use PostgreSQL.
            from lyra_crawl.backends.postgres import PostgresDatabase

            database = PostgresDatabase(url)
            await database.open()
            self.opened.append(database)
            return SqlStore(database)
        raise _unknown(url, "LYRA_DB_URL")

    async def coordinator(self, url: str) -> Coordinator:
        if url.startswith(SQLITE_PREFIX):
            database = await self._sqlite_database(url, "LYRA_COORDINATION_URL")
            signals = ReleaseSignals()
            self.opened.append(signals)
            return SqliteCoordinator(database, signals)
        if url.startswith(REDIS_SCHEMES):
            # Imported here: crawls on SQLite alone never load redis-py.
            from lyra_crawl.backends.redis import RedisCoordinator

            coordinator = await RedisCoordinator.open(url)
            self.opened.append(coordinator)
            return coordinator
        raise _unknown(url, "LYRA_COORDINATION_URL")

    async def _sqlite_database(self, url: str, setting: str) -> SqliteDatabase:
        path = sqlite_path(url)
        if path is None or not str(path):
            raise _unknown(url, setting)
        key = path.resolve()
        if key not in self._sqlite:
            database = SqliteDatabase(path)
            await database.open()
            self.opened.append(database)
            self._sqlite[key] = database
        return self._sqlite[key]

    async def close_all(self) -> None:
        for connection in reversed(self.opened):
            await connection.close()


async def try_backend(setting: str, url: str) -> None:
    """Open and close the one backend `url` names as `setting` (LYRA_DB_URL or
    LYRA_COORDINATION_URL): BackendError if it cannot be used."""
    opener = _Opener()
    try:
        if setting == "LYRA_DB_URL":
            await opener.store(url)
        else:
            await opener.coordinator(url)
    finally:
        await opener.close_all()


_KNOWN_URLS = {
    "LYRA_DB_URL": "sqlite:///path (relative), sqlite:////absolute/path or "
    "postgresql://user:password@host:port/database",
    "LYRA_COORDINATION_URL": "sqlite:///path (relative), sqlite:////absolute/path or "
    "redis://[:password@]host:port/db",
}


def _unknown(url: str, setting: str) -> BackendError:
    return BackendError(
        f"{setting} {show(redact_url(url))} is not a backend lyra knows: use {_KNOWN_URLS[setting]}"
    )


async def with_backends(
    settings: Mapping[str, Any] | Any, work: Callable[[Backends], Awaitable[T]]
) -> T:
    """`work(backends)` with the backends the settings name, closed afterwards."""
    backends = await open_backends(urls_from_settings(settings))
    try:
        return await work(backends)
    finally:
        await backends.close()


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` to its end from code that runs before or after the reactor (commands).

    On the event loop Scrapy's asyncio reactor set for this thread when there is one, so the
    reactor later finds it as it expects; else on a loop of its own.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            loop = None
    if loop is None or loop.is_closed() or loop.is_running():
        return asyncio.run(work)
    return loop.run_until_complete(work)
