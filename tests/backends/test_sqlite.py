"""The SQLite backends on real files: WAL, the worker thread that owns the connection, older
files upgraded, URLs and clear errors. The ResultStore protocol itself is tested on every
backend in test_store.py."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from lyra_crawl.backend_urls import BackendUrls, sqlite_url, urls_from_settings
from lyra_crawl.backends import open_backends
from lyra_crawl.backends.rows import ITEM_COLUMNS
from lyra_crawl.backends.sqlite.database import WORKER_THREAD, SqliteDatabase
from lyra_crawl.backends.statements import LINKS_BY_URL
from lyra_crawl.paging.ledger import PageLedger
from lyra_crawl.quoting import redact_url
from lyra_crawl.records import (
    BackendError,
    PageRecord,
)
from tests.backends.test_store import record
from tests.conftest import in_own_loop, with_store

HERE = Path(__file__).parent


def tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    finally:
        conn.close()


def test_database_is_created_in_wal_mode_with_its_folder(tmp_path):
    path = tmp_path / "new" / "folder" / "lyra.sqlite3"

    async def journal_mode(backends):
        return await backends.store._db.read(
            lambda conn: conn.execute("PRAGMA journal_mode").fetchone()[0]
        )

    assert with_store(path, journal_mode) == "wal"
    assert tables(path) >= {
        "queries",
        "serp_items",
        "papers",
        "engine_usage",
        "engine_rate",
        "engine_health",
        "intervention_queue",
        "serp_cache",
        "serp_pages",
        "batches",
        "batch_entries",
    }


def test_an_unwritable_path_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(BackendError, match="LYRA_DB_PATH"):
        with_store(tmp_path / "file" / "lyra.sqlite3", lambda backends: None)


def test_the_ledger_flushes_a_page_once_every_item_is_kept_or_dropped():
    flushed = []
    ledger = PageLedger(lambda record, items: flushed.append((record.page_number, len(items))))
    record = PageRecord(query_id=1, source="mojeek", page_number=1, outcome="ok", results=3)
    ledger.open_page(record, expected=3)
    ledger.keep("mojeek", 1, {"url": "a"})
    ledger.drop("mojeek", 1)
    assert flushed == []
    ledger.annotate("mojeek", 1, novelty_rate=0.5)
    ledger.keep("mojeek", 1, {"url": "b"})
    assert flushed == [(1, 2)]

    ledger.open_page(PageRecord(1, "mojeek", 2, "empty", 0), expected=0)
    assert flushed == [(1, 2), (2, 0)]


def test_a_database_from_an_older_version_gains_the_new_columns(tmp_path):
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE queries (id INTEGER PRIMARY KEY, query_text TEXT NOT NULL,"
        " normalized_query TEXT NOT NULL, engine TEXT NOT NULL, serp_max_pages INTEGER NOT NULL,"
        " strategy TEXT NOT NULL, started_at TEXT NOT NULL);"
        "INSERT INTO queries VALUES (1, 'old', 'old', 'mojeek', 3, 'auto', '2026-01-01');"
    )
    old.close()

    async def work(backends):
        store = backends.store
        query_id = await store.start_query(record())
        await store.finish_query(
            query_id,
            status="finished",
            stop_reasons={"mojeek": "error"},
            errors={"mojeek": "y"},
            relevance_threshold=None,
        )
        return await store.query(1)

    row = with_store(path, work)

    assert (row.query_text, row.status, row.cache_hit) == ("old", "running", False)
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(queries)")}
    assert {"errors", "attribution", "cached_from", "pid", "sources", "batch_entry_id"} <= columns


def test_a_file_of_the_previous_release_opens_and_keeps_its_rows(tmp_path):
    path = tmp_path / "v1.sqlite3"
    old = sqlite3.connect(path)
    old.executescript((HERE / "schemas" / "sqlite_v1.sql").read_text())
    old.execute(
        "INSERT INTO queries (query_text, normalized_query, engine, serp_max_pages, strategy,"
        " status, started_at) VALUES ('q', 'q', 'mojeek', 3, 'auto', 'finished', '2026-01-01')"
    )
    old.execute(
        "INSERT INTO serp_items (query_id, source, engine, rank, page_number, url,"
        " normalized_url, title, fetched_at) VALUES (1, 'mojeek', 'mojeek', 1, 1,"
        " 'https://a.example/', 'https://a.example/', 'A', '2026-01-01')"
    )
    old.commit()
    old.close()

    async def work(backends):
        return await backends.store.items(1)

    (stored,) = with_store(path, work)

    assert (stored.url, stored.kind, stored.authors, stored.position) == (
        "https://a.example/",
        "serp",
        (),
        0,
    )
    assert {"batches", "batch_entries"} <= tables(path)
    items = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(serp_items)")}
    assert set(ITEM_COLUMNS) <= items


def test_every_statement_runs_on_the_worker_thread_and_nowhere_else(tmp_path):
    database = SqliteDatabase(tmp_path / "db.sqlite3")

    async def work():
        await database.open()
        try:
            thread = await database.read(lambda conn: threading.current_thread().name)
            with pytest.raises(sqlite3.ProgrammingError, match="thread"):
                database._connection().execute("SELECT 1")  # from this thread: refused
            return thread
        finally:
            await database.close()

    assert in_own_loop(work()).startswith(WORKER_THREAD)


def open_files(path: Path) -> int:
    """How many of this process's descriptors point at `path`."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == str(path)
        except OSError:
            continue
    return count


def test_one_connection_serves_both_backends_of_one_file(tmp_path):
    path = tmp_path / "db.sqlite3"
    other = tmp_path / "coordination.sqlite3"

    async def work(urls):
        backends = await open_backends(urls)
        try:
            await backends.coordinator.reserve_quota("mojeek", "2026-01-01", None)
            databases = [c for c in backends.connections if isinstance(c, SqliteDatabase)]
            return open_files(path), len(databases)
        finally:
            await backends.close()

    same = BackendUrls(sqlite_url(path), sqlite_url(path))
    assert in_own_loop(work(same)) == (1, 1)
    apart = BackendUrls(sqlite_url(path), sqlite_url(other))
    assert in_own_loop(work(apart)) == (1, 2)
    assert open_files(path) == 0


def test_urls_come_from_the_settings_with_lyra_db_path_as_an_alias(tmp_path):
    assert urls_from_settings({}) == BackendUrls(
        "sqlite:///data/lyra.sqlite3", "sqlite:///data/lyra.sqlite3"
    )
    assert urls_from_settings({"LYRA_DB_PATH": "/x/db"}).coordination == "sqlite:////x/db"
    assert urls_from_settings(
        {"LYRA_DB_URL": "sqlite:////x/db", "LYRA_COORDINATION_URL": "sqlite:///c"}
    ) == BackendUrls("sqlite:////x/db", "sqlite:///c")
    with pytest.raises(BackendError, match="name different databases"):
        urls_from_settings({"LYRA_DB_URL": "sqlite:///a", "LYRA_DB_PATH": "b"})
    # Both naming one file, however spelled, is no conflict: LYRA_DB_URL is used.
    same = {"LYRA_DB_URL": "sqlite:///data/x", "LYRA_DB_PATH": str(Path("data/x").resolve())}
    assert urls_from_settings(same).store == "sqlite:///data/x"
    # A PostgreSQL store keeps results only: coordination stays in the default SQLite file.
    assert urls_from_settings({"LYRA_DB_URL": "postgresql://u@h/db"}) == BackendUrls(
        "postgresql://u@h/db", "sqlite:///data/lyra.sqlite3"
    )
    with pytest.raises(BackendError, match="name different databases"):
        urls_from_settings({"LYRA_DB_URL": "postgresql://u@h/db", "LYRA_DB_PATH": "b"})


def test_an_unknown_scheme_is_one_clear_error_without_the_password():
    urls = BackendUrls("mysql://lyra:s3cret@db.example/lyra", "sqlite:///x")
    with pytest.raises(BackendError) as raised:
        in_own_loop(open_backends(urls))
    assert "s3cret" not in str(raised.value)
    assert "LYRA_DB_URL 'mysql://lyra:***@db.example/lyra'" in str(raised.value)
    assert "sqlite:///" in str(raised.value)
    assert "postgresql://" in str(raised.value)


def test_an_unknown_coordination_scheme_names_the_schemes_it_takes(tmp_path):
    urls = BackendUrls(sqlite_url(tmp_path / "x.sqlite3"), "memcached://:s3cret@cache.example/0")
    with pytest.raises(BackendError) as raised:
        in_own_loop(open_backends(urls))
    message = str(raised.value)
    assert "s3cret" not in message
    assert "LYRA_COORDINATION_URL 'memcached://:***@cache.example/0'" in message
    assert "sqlite:///" in message and "redis://" in message


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://user:s3cret@host/db", "postgresql://user:***@host/db"),
        ("redis://:s3cret@h:6379/0", "redis://:***@h:6379/0"),
        (
            "postgresql://u:s3cret@[::1]:5432/db?sslmode=require",
            "postgresql://u:***@[::1]:5432/db?sslmode=require",
        ),
        ("postgresql://u:s3cret@Host:notaport/db", "postgresql://u:***@Host:notaport/db"),
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("sqlite:////abs/lyra.sqlite3", "sqlite:////abs/lyra.sqlite3"),
        ("redis://:s3cret@[::1/0", "redis://***"),
    ],
)
def test_redact_url_hides_the_password_and_keeps_the_rest(url, shown):
    assert redact_url(url) == shown


def test_a_save_finds_the_querys_unlinked_items_by_query_id(tmp_path):
    # Not through the index of every item without a paper, which grows with the store: a save
    # after 1,000 serp-only queries spent 7 ms there.
    path = tmp_path / "plan.sqlite3"
    database = SqliteDatabase(path)
    in_own_loop(database.open())
    in_own_loop(database.close())
    with sqlite3.connect(path) as conn:
        plan = [
            row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {LINKS_BY_URL.sqlite.sql}", (1,))
        ]
    assert any(
        step.startswith("SEARCH item USING INDEX") and "(query_id=?)" in step for step in plan
    )
