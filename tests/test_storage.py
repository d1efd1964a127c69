"""Storage on real SQLite files: WAL, one transaction per page, clear errors."""

from __future__ import annotations

import sqlite3

import pytest

from lyra_crawl.paging.ledger import PageLedger
from lyra_crawl.storage import PageRecord, QueryRecord, StorageError, open_storage


def new_query(storage) -> int:
    return storage.start_query(
        QueryRecord(
            query_text="x",
            normalized_query="x",
            engine="mojeek",
            serp_page=1,
            serp_max_pages=3,
            strategy="auto",
        )
    )


def item(query_id: int, rank: int, url: str) -> dict:
    return {
        "query_id": query_id,
        "source": "mojeek",
        "engine": "mojeek",
        "rank": rank,
        "page_number": 1,
        "url": url,
        "normalized_url": url,
        "title": f"t{rank}",
    }


def test_database_is_created_in_wal_mode_with_its_folder(tmp_path):
    storage = open_storage(tmp_path / "new" / "folder" / "lyra.sqlite3")
    mode = storage._conn.execute("PRAGMA journal_mode").fetchone()[0]
    storage.close()
    assert mode == "wal"
    tables = {
        row[0]
        for row in sqlite3.connect(tmp_path / "new" / "folder" / "lyra.sqlite3").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert tables >= {
        "queries",
        "serp_items",
        "papers",
        "engine_usage",
        "engine_rate",
        "engine_health",
        "intervention_queue",
        "serp_cache",
        "serp_pages",
    }


def test_a_page_is_stored_whole_or_not_at_all(tmp_path):
    storage = open_storage(tmp_path / "db.sqlite3")
    query_id = new_query(storage)
    page = PageRecord(query_id=query_id, source="mojeek", page_number=1, outcome="ok", results=2)
    broken = [
        item(query_id, 1, "https://a.example/"),
        {**item(query_id, 2, "https://b.example/"), "title": None},
    ]
    with pytest.raises(sqlite3.IntegrityError):
        storage.store_page(page, broken)
    assert storage.items(query_id) == [] and storage.pages(query_id) == []

    stored = storage.store_page(page, [item(query_id, 1, "https://a.example/")])
    assert stored == 1 and len(storage.pages(query_id)) == 1


def test_page_number_is_required(tmp_path):
    storage = open_storage(tmp_path / "db.sqlite3")
    query_id = new_query(storage)
    page = PageRecord(query_id=query_id, source="mojeek", page_number=1, outcome="ok", results=1)
    with pytest.raises(sqlite3.IntegrityError):
        storage.store_page(page, [{**item(query_id, 1, "https://a.example/"), "page_number": None}])


def test_an_unwritable_path_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(StorageError, match="LYRA_DB_PATH"):
        open_storage(tmp_path / "file" / "lyra.sqlite3")


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

    storage = open_storage(path)
    query_id = new_query(storage)
    storage.finish_query(query_id, status="finished", stop_reasons={}, errors={"x": "y"})
    row = storage.query(1)
    storage.close()

    assert (row["query_text"], row["status"], row["cache_hit"]) == ("old", "running", 0)
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(queries)")}
    assert {"errors", "attribution", "cached_from", "pid", "sources"} <= columns
