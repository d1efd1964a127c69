"""Backend URLs: which store and coordinator the settings name, and where a URL points. Pure.

LYRA_DB_URL names the ResultStore (a SQLite file, or PostgreSQL), LYRA_COORDINATION_URL the
Coordinator (default: the same SQLite file; with a PostgreSQL store, the default SQLite file);
LYRA_DB_PATH, a plain file path, is the older spelling of LYRA_DB_URL. Read without opening
anything (lyra_crawl.backends opens them), so what a Scrapyd job is told of its store and
coordinator, and where saved pages go, are known without loading a backend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lyra_crawl.quoting import redact_url
from lyra_crawl.records import BackendError

DEFAULT_DB_URL = "sqlite:///data/lyra.sqlite3"
SQLITE_PREFIX = "sqlite:///"
POSTGRES_PREFIXES = ("postgresql://", "postgres://")
REDIS_SCHEMES = ("redis://", "rediss://")
DEFAULT_PORTS = {"postgresql": 5432, "redis": 6379, "rediss": 6379}


@dataclass(frozen=True)
class BackendUrls:
    store: str
    coordination: str


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
