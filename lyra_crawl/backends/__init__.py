"""Backends: where results are kept and what crawls coordinate through. Only this package
speaks SQL.

The protocols are in protocols.py, the records they exchange in lyra_crawl.records.
`open_backends` opens the ResultStore and the Coordinator the settings name
(lyra_crawl.backend_urls): one SQLite connection serves both when their URLs name the same file.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from lyra_crawl.backend_urls import (
    POSTGRES_PREFIXES,
    REDIS_SCHEMES,
    SQLITE_PREFIX,
    BackendUrls,
    sqlite_path,
    urls_from_settings,
)
from lyra_crawl.backends.protocols import Coordinator, ResultStore
from lyra_crawl.backends.sqlite import SqliteCoordinator, SqliteDatabase
from lyra_crawl.backends.sqlite.release_signals import ReleaseSignals
from lyra_crawl.backends.store import SqlStore
from lyra_crawl.quoting import redact_url, show
from lyra_crawl.records import BackendError

T = TypeVar("T")


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
