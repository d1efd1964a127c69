"""The SQLite backends on real files: WAL, one transaction per page, the worker thread that owns
the connection, batches under leases, older files upgraded, URLs and clear errors."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
from dataclasses import fields
from pathlib import Path

import pytest

from lyra_crawl.backends import (
    BackendUrls,
    open_backends,
    redact_url,
    sqlite_url,
    urls_from_settings,
)
from lyra_crawl.backends.records import (
    BackendError,
    EntrySpec,
    PageRecord,
    QueryRecord,
    StoredItem,
)
from lyra_crawl.backends.rows import ITEM_COLUMNS
from lyra_crawl.backends.sqlite.database import WORKER_THREAD, SqliteDatabase
from lyra_crawl.items import ResultItem
from lyra_crawl.paging.ledger import PageLedger
from tests.conftest import in_own_loop, with_store

HERE = Path(__file__).parent


def record() -> QueryRecord:
    return QueryRecord(
        query_text="x",
        normalized_query="x",
        engine="mojeek",
        serp_page=1,
        serp_max_pages=3,
        strategy="auto",
    )


def item(query_id: int, rank: int, url: str, **fields: object) -> ResultItem:
    values: dict = {
        "query_id": query_id,
        "source": "mojeek",
        "rank": rank,
        "page_number": 1,
        "position": rank,
        "normalized_url": url,
        **fields,
    }
    return ResultItem(url, f"t{rank}", **values)


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


def test_a_page_is_stored_whole_or_not_at_all(tmp_path):
    async def work(backends):
        store = backends.store
        query_id = await store.start_query(record())
        page = PageRecord(
            query_id=query_id, source="mojeek", page_number=1, outcome="ok", results=2
        )
        broken = [item(query_id, 1, "https://a.example/"), item(query_id, 2, "https://b.example/")]
        broken[1].title = None
        with pytest.raises(sqlite3.IntegrityError):
            await store.store_page(page, broken)
        assert await store.items(query_id) == [] and await store.pages(query_id) == []

        stored = await store.store_page(page, [item(query_id, 1, "https://a.example/")])
        assert stored == 1 and len(await store.pages(query_id)) == 1

    with_store(tmp_path / "db.sqlite3", work)


def test_page_number_is_required(tmp_path):
    async def work(backends):
        store = backends.store
        query_id = await store.start_query(record())
        page = PageRecord(
            query_id=query_id, source="mojeek", page_number=1, outcome="ok", results=1
        )
        with pytest.raises(sqlite3.IntegrityError):
            await store.store_page(page, [item(query_id, 1, "https://a.", page_number=None)])

    with_store(tmp_path / "db.sqlite3", work)


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
            stop_reasons={},
            errors={"x": "y"},
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
    old.executescript((HERE / "schema_v1.sql").read_text())
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


def test_the_item_columns_are_the_stored_items_fields(tmp_path):
    async def work(backends):
        store = backends.store
        query_id = await store.start_query(record())
        full = item(
            query_id,
            1,
            "https://a.example/",
            kind="api",
            doi="10.1/x",
            authors=("Ada Lovelace", "Charles Babbage"),
            year=1843,
            venue="Notes",
            abstract="On the engine.",
            source_id="W1",
            relevance=0.5,
        )
        await store.store_page(PageRecord(query_id, "mojeek", 1, "ok", 1), [full])
        return full, await store.items(query_id)

    written, (stored,) = with_store(tmp_path / "db.sqlite3", work)

    assert tuple(field.name for field in fields(StoredItem)) == ITEM_COLUMNS
    for field in fields(ResultItem):
        assert getattr(stored, field.name) == getattr(written, field.name), field.name


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
            return open_files(path), len(backends.connections)
        finally:
            await backends.close()

    same = BackendUrls(sqlite_url(path), sqlite_url(path))
    assert in_own_loop(work(same)) == (1, 1)
    apart = BackendUrls(sqlite_url(path), sqlite_url(other))
    assert in_own_loop(work(apart)) == (1, 2)
    assert open_files(path) == 0


def test_batch_entries_are_taken_once_under_a_lease_and_again_when_it_runs_out(tmp_path):
    async def work(backends):
        store = backends.store
        batch = await store.create_batch(
            source="b.yaml",
            content_hash="h",
            entries=[
                EntrySpec(1, "a", {"query": "a"}),
                EntrySpec(2, "b", {"query": "b"}),
                EntrySpec(3, "c", {}, rejected="entry 3: bad"),
                EntrySpec(4, "d", {"query": "d"}),
            ],
        )
        first = await store.take_entries(batch.id, 2, owner="one", lease_s=60)
        second = await store.take_entries(batch.id, 5, owner="two", lease_s=0)
        nothing = await store.take_entries(batch.id, 5, owner="three", lease_s=60)
        again = await store.take_entries(batch.id, 5, owner="three", lease_s=60)
        await store.finish_entry(first[0].id, state="done", query_id=None)
        states = {e.position: e.state for e in await store.batch_entries(batch.id)}
        return batch, first, second, nothing, again, states

    batch, first, second, nothing, again, states = with_store(tmp_path / "db.sqlite3", work)

    assert batch.entries == 4
    assert [e.position for e in first] == [1, 2]
    assert [e.position for e in second] == [4], "rejected entries are never taken"
    # Entry 4's lease was 0 s: it ran out at once, so the next taker gets it again.
    assert [e.position for e in nothing] == [4] and nothing[0].attempts == 2
    assert again == []
    assert states == {1: "done", 2: "running", 3: "rejected", 4: "running"}


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


def test_an_unknown_scheme_is_one_clear_error_without_the_password():
    urls = BackendUrls("mysql://lyra:s3cret@db.example/lyra", "sqlite:///x")
    with pytest.raises(BackendError) as raised:
        in_own_loop(open_backends(urls))
    assert "s3cret" not in str(raised.value)
    assert "LYRA_DB_URL 'mysql://lyra:***@db.example/lyra'" in str(raised.value)
    assert "sqlite:///" in str(raised.value)
    assert "issue 14" in str(raised.value)


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


def test_a_dead_crawls_entries_are_taken_again_at_once_and_other_owners_wait(tmp_path):
    host = socket.gethostname()
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()

    async def work(backends):
        store = backends.store
        batch = await store.create_batch(
            source="b.yaml",
            content_hash="h",
            entries=[EntrySpec(1, "a", {"query": "a"}), EntrySpec(2, "b", {"query": "b"})],
        )
        await store.take_entries(batch.id, 1, owner=f"{host}:{gone.pid}", lease_s=60)
        await store.take_entries(batch.id, 1, owner=f"{host}:worker-b", lease_s=60)
        return await store.take_entries(batch.id, 5, owner=f"{host}:{os.getpid()}", lease_s=60)

    again = with_store(tmp_path / "db.sqlite3", work)

    # Entry 1's crawl is gone: taken again. Entry 2's owner is no pid to check: its lease holds.
    assert [(entry.position, entry.attempts) for entry in again] == [(1, 2)]
