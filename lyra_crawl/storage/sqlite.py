"""SQLite backend: WAL mode, a busy timeout, and one short IMMEDIATE transaction per write.

Several crawl processes (Scrapyd jobs) share one file. Writers take the write lock up front
(BEGIN IMMEDIATE) so two processes never deadlock upgrading read locks, and WAL lets readers
go on while one writes. Each page is stored in one transaction: a crash loses at most the page
in flight.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT_S = 60.0

ITEM_COLUMNS = (
    "query_id",
    "source",
    "engine",
    "rank",
    "page_number",
    "url",
    "normalized_url",
    "title",
    "snippet",
    "date",
    "doi",
    "arxiv_id",
    "pmid",
    "relevance",
    "fetched_at",
)


class StorageError(RuntimeError):
    """The database cannot be opened or written; the message names the path and the fix."""


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class QueryRecord:
    """What a crawl knows about its query when it starts."""

    query_text: str
    normalized_query: str
    engine: str
    serp_page: int
    serp_max_pages: int
    strategy: str
    sources: str = "serp"
    time_range: str | None = None
    region: str | None = None
    task_id: str | None = None
    job_id: str | None = None
    selection: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class PageRecord:
    """One fetched page of one source, stored with its items in one transaction."""

    query_id: int
    source: str
    page_number: int
    outcome: str
    results: int
    url: str = ""
    novelty_rate: float | None = None
    harvest_rate: float | None = None


class Storage:
    """All reads and writes of one SQLite file."""

    def __init__(self, path: Path, busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
            )
            self._conn.row_factory = sqlite3.Row
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._apply_schema()
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(
                f"cannot open database {path} ({exc}): check that the folder is writable "
                "or set LYRA_DB_PATH to another file"
            ) from exc

    def _apply_schema(self) -> None:
        schema = resources.files("lyra_crawl.storage").joinpath("schema.sql").read_text("utf-8")
        self._conn.executescript(schema)
        with self.transaction() as conn:
            if conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StorageError(f"cannot write to {self.path} ({exc})") from exc
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._conn.execute("ROLLBACK")
            raise StorageError(
                f"cannot write to {self.path} ({exc}): check free disk space and permissions"
            ) from exc

    def close(self) -> None:
        self._conn.close()

    # -- queries -------------------------------------------------------------------------

    def start_query(self, record: QueryRecord) -> int:
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO queries (query_text, normalized_query, task_id, engine, sources,"
                " time_range, region, serp_page, serp_max_pages, strategy, status, selection,"
                " job_id, pid, started_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                (
                    record.query_text,
                    record.normalized_query,
                    record.task_id,
                    record.engine,
                    record.sources,
                    record.time_range,
                    record.region,
                    record.serp_page,
                    record.serp_max_pages,
                    record.strategy,
                    json.dumps(record.selection) if record.selection is not None else None,
                    record.job_id,
                    os.getpid(),
                    utc_now(),
                ),
            )
            return int(cursor.lastrowid)

    def finish_query(
        self,
        query_id: int,
        *,
        status: str,
        stop_reasons: Mapping[str, str],
        harvest_rate: float | None = None,
    ) -> None:
        """Close the query row; pages and items are counted from what was really stored."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE queries SET status = ?, stop_reason = ?, harvest_rate = ?,"
                " pages_fetched = (SELECT COUNT(*) FROM serp_pages WHERE query_id = ?),"
                " items = (SELECT COUNT(*) FROM serp_items WHERE query_id = ?),"
                " finished_at = ? WHERE id = ?",
                (
                    status,
                    json.dumps(dict(stop_reasons), sort_keys=True),
                    harvest_rate,
                    query_id,
                    query_id,
                    utc_now(),
                    query_id,
                ),
            )

    def query(self, query_id: int) -> sqlite3.Row | None:
        return self._conn.execute("SELECT * FROM queries WHERE id = ?", (query_id,)).fetchone()

    def latest_query_id(self) -> int | None:
        row = self._conn.execute("SELECT MAX(id) FROM queries").fetchone()
        return row[0]

    # -- pages and items -----------------------------------------------------------------

    def store_page(self, page: PageRecord, items: Sequence[Mapping[str, Any]]) -> int:
        """Write one page's row and its items atomically; returns the items newly stored."""
        fetched_at = utc_now()
        rows = [
            tuple(
                fetched_at if column == "fetched_at" else item.get(column)
                for column in ITEM_COLUMNS
            )
            for item in items
        ]
        placeholders = ", ".join("?" for _ in ITEM_COLUMNS)
        with self.transaction() as conn:
            before = conn.total_changes
            conn.executemany(
                f"INSERT OR IGNORE INTO serp_items ({', '.join(ITEM_COLUMNS)})"
                f" VALUES ({placeholders})",
                rows,
            )
            stored = conn.total_changes - before
            conn.execute(
                "INSERT OR REPLACE INTO serp_pages (query_id, source, page_number, outcome,"
                " results, items_stored, novelty_rate, harvest_rate, url, fetched_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    page.query_id,
                    page.source,
                    page.page_number,
                    page.outcome,
                    page.results,
                    stored,
                    page.novelty_rate,
                    page.harvest_rate,
                    page.url,
                    fetched_at,
                ),
            )
        return stored

    def pages(self, query_id: int) -> list[sqlite3.Row]:
        return self._conn.execute(
            "SELECT * FROM serp_pages WHERE query_id = ? ORDER BY source, page_number",
            (query_id,),
        ).fetchall()

    def items(self, query_id: int) -> list[sqlite3.Row]:
        return self._conn.execute(
            "SELECT * FROM serp_items WHERE query_id = ? ORDER BY source, rank", (query_id,)
        ).fetchall()

    # -- batches, cache and reports (scrapy batch, scrapy report) ---------------------------

    def query_for_job(self, job_id: str) -> sqlite3.Row | None:
        """The query row a Scrapyd job wrote (its `_job` argument), or None if it never started."""
        return self._conn.execute(
            "SELECT * FROM queries WHERE job_id = ? ORDER BY id DESC LIMIT 1", (job_id,)
        ).fetchone()

    def fresh_cache_entry(self, key: str, now: datetime) -> int | None:
        """The query id cached under `key` that has not expired at `now`, else None."""
        # julianday() compares the instants, whatever ISO 8601 form the writer used.
        row = self._conn.execute(
            "SELECT query_id FROM serp_cache WHERE cache_key = ?"
            " AND julianday(expires_at) > julianday(?)",
            (key, now.astimezone(UTC).isoformat(timespec="milliseconds")),
        ).fetchone()
        return None if row is None else int(row[0])

    def store_cache_entry(
        self, key: str, query_id: int, *, created_at: datetime, expires_at: datetime
    ) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO serp_cache (cache_key, query_id, created_at, expires_at)"
                " VALUES (?, ?, ?, ?)",
                (
                    key,
                    query_id,
                    created_at.astimezone(UTC).isoformat(timespec="milliseconds"),
                    expires_at.astimezone(UTC).isoformat(timespec="milliseconds"),
                ),
            )

    def recent_query_ids(self, last: int) -> list[int]:
        """The ids of the `last` queries started most recently, oldest first."""
        rows = self._conn.execute(
            "SELECT id FROM queries ORDER BY id DESC LIMIT ?", (last,)
        ).fetchall()
        return sorted(row[0] for row in rows)

    def task_query_ids(self, task_id: str) -> list[int]:
        rows = self._conn.execute(
            "SELECT id FROM queries WHERE task_id = ? ORDER BY id", (task_id,)
        ).fetchall()
        return [row[0] for row in rows]

    def repeated_url_count(self, query_id: int) -> int:
        """Items of this query whose normalized URL an earlier crawl of the same query stored."""
        return self._conn.execute(
            "SELECT COUNT(*) FROM serp_items AS item"
            " JOIN queries AS this ON this.id = item.query_id"
            " WHERE item.query_id = ? AND EXISTS ("
            "   SELECT 1 FROM serp_items AS seen JOIN queries AS earlier"
            "   ON earlier.id = seen.query_id"
            "   WHERE seen.normalized_url = item.normalized_url AND earlier.id < this.id"
            "   AND earlier.normalized_query = this.normalized_query)",
            (query_id,),
        ).fetchone()[0]

    def attribution_counts(self, query_id: int) -> dict[str, int]:
        """Canonical papers behind this query's items, counted by attribution."""
        rows = self._conn.execute(
            "SELECT paper.attribution, COUNT(DISTINCT paper.id) FROM serp_items AS item"
            " JOIN papers AS paper ON paper.id = item.paper_id"
            " WHERE item.query_id = ? GROUP BY paper.attribution",
            (query_id,),
        ).fetchall()
        return {row[0]: row[1] for row in rows}

    def engine_usage_on(self, date: str) -> dict[str, int]:
        """Requests counted against each engine's daily quota on `date` (YYYY-MM-DD, UTC)."""
        rows = self._conn.execute(
            "SELECT engine, usage_count FROM engine_usage WHERE date = ?", (date,)
        ).fetchall()
        return {row[0]: row[1] for row in rows}


def open_storage(
    path: str | os.PathLike[str], busy_timeout_s: float = DEFAULT_BUSY_TIMEOUT_S
) -> Storage:
    return Storage(Path(path), busy_timeout_s)
