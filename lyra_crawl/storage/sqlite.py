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
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from lyra_crawl.politeness.breaker import BreakerState, Health

SCHEMA_VERSION = 1
DEFAULT_BUSY_TIMEOUT_S = 60.0

T = TypeVar("T")

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


@dataclass(frozen=True)
class StoredPaper:
    """A canonical paper as the merge hands it to storage."""

    title: str
    normalized_title: str
    attribution: str
    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    year: int | None = None
    authors: tuple[str, ...] = ()
    venue: str | None = None
    abstract: str | None = None
    external_ids: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


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
            self._mark_dead_crawls_interrupted()
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(
                f"cannot open database {path} ({exc}): check that the folder is writable "
                "or set LYRA_DB_PATH to another file"
            ) from exc

    def _apply_schema(self) -> None:
        """Create what is missing: tables, indexes, and columns added since the file was made."""
        schema = resources.files("lyra_crawl.storage").joinpath("schema.sql").read_text("utf-8")
        # Columns first: the schema's indexes may name a column an old table lacks.
        with self.transaction() as conn:
            for table, column, declaration in _missing_columns(conn, schema):
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        self._conn.executescript(schema)
        with self.transaction() as conn:
            if conn.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == 0:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any error.

        A write SQLite refuses (disk full, read-only file or folder) is a StorageError naming
        the path and the fix; a constraint failure stays an sqlite3.IntegrityError.
        """
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException as exc:
            if self._conn.in_transaction:
                self._rollback()
            if isinstance(exc, sqlite3.Error) and not isinstance(exc, sqlite3.IntegrityError):
                raise StorageError(
                    f"cannot write to {self.path} ({exc}): check free disk space and that the "
                    "file and its folder are writable, or set LYRA_DB_PATH to another file"
                ) from exc
            raise

    def _rollback(self) -> None:
        # A full disk can refuse even the rollback; SQLite then rolls back on the next open.
        with suppress(sqlite3.Error):
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()

    # -- interrupted crawls: found on open, resumed with -a resume=true ---------------------

    def _mark_dead_crawls_interrupted(self) -> None:
        """Mark `running` queries whose process is gone (killed, crashed) as interrupted."""
        rows = self._conn.execute(
            "SELECT id, pid FROM queries WHERE status = 'running' AND pid IS NOT NULL"
        ).fetchall()
        dead = [row["id"] for row in rows if not _process_alive(row["pid"])]
        if dead:
            with self.transaction() as conn:
                conn.executemany(
                    "UPDATE queries SET status = 'interrupted', finished_at = ?"
                    " WHERE id = ? AND status = 'running'",
                    [(utc_now(), query_id) for query_id in dead],
                )

    def interrupted_query(self, record: QueryRecord, any_engine: bool) -> sqlite3.Row | None:
        """The latest interrupted crawl of the same query, pages and options as `record`."""
        return self._conn.execute(
            "SELECT * FROM queries WHERE status = 'interrupted' AND normalized_query = ?"
            " AND (? OR engine = ?) AND sources = ? AND serp_page = ? AND serp_max_pages = ?"
            " AND strategy = ? AND time_range IS ? AND region IS ? ORDER BY id DESC LIMIT 1",
            (
                record.normalized_query,
                any_engine,
                record.engine,
                record.sources,
                record.serp_page,
                record.serp_max_pages,
                record.strategy,
                record.time_range,
                record.region,
            ),
        ).fetchone()

    def reopen_query(self, query_id: int) -> None:
        """Make an interrupted query this process's running crawl again."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE queries SET status = 'running', pid = ?, finished_at = NULL WHERE id = ?",
                (os.getpid(), query_id),
            )

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
        errors: Mapping[str, str] | None = None,
        relevance_threshold: float | None = None,
    ) -> None:
        """Close the query row; pages, items and the harvest rate (share of items whose
        relevance reaches the threshold) are counted from what was really stored."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE queries SET status = ?, stop_reason = ?, errors = ?,"
                " harvest_rate = (SELECT AVG(relevance >= ?) FROM serp_items"
                "   WHERE query_id = ? AND relevance IS NOT NULL),"
                " pages_fetched = (SELECT COUNT(*) FROM serp_pages WHERE query_id = ?),"
                " items = (SELECT COUNT(*) FROM serp_items WHERE query_id = ?),"
                " finished_at = ? WHERE id = ?",
                (
                    status,
                    json.dumps(dict(stop_reasons), sort_keys=True),
                    json.dumps(dict(errors), sort_keys=True) if errors else None,
                    relevance_threshold,
                    query_id,
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
                # Only a URL already stored for the query is skipped (a resumed crawl); any
                # other constraint (a missing page number, title) fails the whole page.
                f"INSERT INTO serp_items ({', '.join(ITEM_COLUMNS)}) VALUES ({placeholders})"
                " ON CONFLICT (query_id, normalized_url) DO NOTHING",
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

    def earlier_urls(self, query_id: int) -> set[str]:
        """Normalized URLs stored by earlier crawls of the same normalized query."""
        rows = self._conn.execute(
            "SELECT DISTINCT i.normalized_url FROM serp_items i JOIN queries q ON q.id = i.query_id"
            " WHERE q.normalized_query = (SELECT normalized_query FROM queries WHERE id = ?)"
            " AND q.id < ?",
            (query_id, query_id),
        ).fetchall()
        return {row[0] for row in rows}

    # -- canonical papers ------------------------------------------------------------------

    def save_papers(
        self,
        query_id: int,
        papers: Sequence[tuple[StoredPaper, Sequence[str]]],
        fused_ranks: Mapping[str, int],
        attribution: Mapping[str, int],
    ) -> None:
        """Upsert each paper and link the query's items (by normalized URL) to it, with the
        items' fused ranks and the query's attribution counts, in one transaction."""
        now = utc_now()
        with self.transaction() as conn:
            for paper, urls in papers:
                paper_id = self._upsert_paper(conn, paper, now)
                conn.executemany(
                    "UPDATE serp_items SET paper_id = ? WHERE query_id = ? AND normalized_url = ?",
                    [(paper_id, query_id, url) for url in urls],
                )
            conn.executemany(
                "UPDATE serp_items SET fused_rank = ? WHERE query_id = ? AND normalized_url = ?",
                [(rank, query_id, url) for url, rank in fused_ranks.items()],
            )
            conn.execute(
                "UPDATE queries SET attribution = ? WHERE id = ?",
                (json.dumps(dict(attribution), sort_keys=True), query_id),
            )

    @staticmethod
    def _upsert_paper(conn: sqlite3.Connection, paper: StoredPaper, now: str) -> int:
        """The id of the stored paper sharing an identifier with `paper`, updated; else new."""
        row = None
        for column in ("doi", "arxiv_id", "pmid"):
            value = getattr(paper, column)
            if value:
                row = conn.execute(f"SELECT * FROM papers WHERE {column} = ?", (value,)).fetchone()
                if row is not None:
                    break
        if row is None:
            cursor = conn.execute(
                "INSERT INTO papers (doi, arxiv_id, pmid, title, normalized_title, year, authors,"
                " venue, abstract, external_ids, attribution, sources, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    paper.doi,
                    paper.arxiv_id,
                    paper.pmid,
                    paper.title,
                    paper.normalized_title,
                    paper.year,
                    json.dumps(list(paper.authors)),
                    paper.venue,
                    paper.abstract,
                    json.dumps(dict(paper.external_ids), sort_keys=True),
                    paper.attribution,
                    json.dumps(sorted(paper.sources)),
                    now,
                    now,
                ),
            )
            return int(cursor.lastrowid)
        sources = sorted(set(json.loads(row["sources"] or "[]")) | set(paper.sources))
        external = {**json.loads(row["external_ids"] or "{}"), **paper.external_ids}
        # Two different attributions (api_only and serp_only, or either and both) make both.
        attribution = paper.attribution if row["attribution"] == paper.attribution else "both"
        conn.execute(
            "UPDATE papers SET arxiv_id = COALESCE(arxiv_id, ?), pmid = COALESCE(pmid, ?),"
            " doi = COALESCE(doi, ?), year = COALESCE(year, ?), venue = COALESCE(venue, ?),"
            " abstract = CASE WHEN length(COALESCE(abstract, '')) >= length(COALESCE(?, ''))"
            "   THEN abstract ELSE ? END,"
            " authors = CASE WHEN authors IS NULL OR authors = '[]' THEN ? ELSE authors END,"
            " external_ids = ?, sources = ?, attribution = ?, updated_at = ? WHERE id = ?",
            (
                paper.arxiv_id,
                paper.pmid,
                paper.doi,
                paper.year,
                paper.venue,
                paper.abstract,
                paper.abstract,
                json.dumps(list(paper.authors)),
                json.dumps(external, sort_keys=True),
                json.dumps(sources),
                attribution,
                now,
                row["id"],
            ),
        )
        return int(row["id"])

    def copy_paper_links(self, from_query_id: int, to_query_id: int) -> None:
        """Give a query answered from cache the papers, fused ranks and attribution of the
        query whose results it re-used."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE serp_items AS item SET (paper_id, fused_rank) = ("
                " SELECT paper_id, fused_rank FROM serp_items AS cached"
                " WHERE cached.query_id = ? AND cached.normalized_url = item.normalized_url)"
                " WHERE item.query_id = ?",
                (from_query_id, to_query_id),
            )
            conn.execute(
                "UPDATE queries SET attribution = (SELECT attribution FROM queries WHERE id = ?)"
                " WHERE id = ?",
                (from_query_id, to_query_id),
            )

    def papers_of(self, query_id: int) -> list[sqlite3.Row]:
        """The canonical papers the query's items are linked to."""
        return self._conn.execute(
            "SELECT * FROM papers WHERE id IN"
            " (SELECT paper_id FROM serp_items WHERE query_id = ?) ORDER BY id",
            (query_id,),
        ).fetchall()

    # -- search-level cache --------------------------------------------------------------

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

    def mark_cache_hit(self, query_id: int, answered_by: int) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE queries SET cache_hit = 1, cached_from = ? WHERE id = ?",
                (answered_by, query_id),
            )

    # -- batches and reports (scrapy batch, scrapy report) -------------------------------

    def query_for_job(self, job_id: str) -> sqlite3.Row | None:
        """The query row a Scrapyd job wrote (its `_job` argument), or None if it never started."""
        return self._conn.execute(
            "SELECT * FROM queries WHERE job_id = ? ORDER BY id DESC LIMIT 1", (job_id,)
        ).fetchone()

    # -- politeness: quotas, the shared rate gate, circuit breakers, interventions ----------
    # Each write is one short BEGIN IMMEDIATE transaction, so concurrent crawls on one file
    # queue on SQLite's write lock (busy_timeout) and never see each other's half-done work.

    def reserve_quota(self, engine: str, date: str, daily_limit: int | None) -> bool:
        """Take one unit of `engine`'s quota for `date`; False when it is spent."""
        limit = -1 if daily_limit is None else daily_limit
        with self.transaction() as conn:
            # One conditional statement: the count can only grow while it is under the limit.
            cursor = conn.execute(
                "INSERT INTO engine_usage (engine, date, usage_count) SELECT ?, ?, 1 WHERE ? != 0"
                " ON CONFLICT (engine, date) DO UPDATE SET usage_count = usage_count + 1"
                " WHERE ? < 0 OR usage_count < ?",
                (engine, date, limit, limit, limit),
            )
            return cursor.rowcount == 1

    def usage(self, engine: str, date: str) -> int:
        row = self._conn.execute(
            "SELECT usage_count FROM engine_usage WHERE engine = ? AND date = ?", (engine, date)
        ).fetchone()
        return int(row[0]) if row else 0

    def claim_rate_slot(
        self, engine: str, lease_s: float, clock: Callable[[], float] = time.time
    ) -> tuple[float, float | None]:
        """Take `engine`'s send slot if it is free: (0, lease token), else (seconds to wait, None).

        The slot stays taken for `lease_s` or until `release_rate_slot`; the clock is read once
        the write lock is held, so waiting for the lock cannot make a claim look earlier.
        """
        with self.transaction() as conn:
            now = clock()
            cursor = conn.execute(
                "INSERT INTO engine_rate (engine, next_allowed) VALUES (?, ?)"
                " ON CONFLICT (engine) DO UPDATE SET next_allowed = excluded.next_allowed"
                " WHERE next_allowed <= ?",
                (engine, now + lease_s, now),
            )
            if cursor.rowcount == 1:
                return 0.0, now + lease_s
            row = conn.execute(
                "SELECT next_allowed FROM engine_rate WHERE engine = ?", (engine,)
            ).fetchone()
        return max(float(row[0]) - now, 0.0), None

    def release_rate_slot(
        self, engine: str, token: float, interval_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        """Free the slot taken with `token`: the next request may go `interval_s` from now."""
        with self.transaction() as conn:
            # A lease that ran out may already be someone else's: leave theirs alone.
            conn.execute(
                "UPDATE engine_rate SET next_allowed = ? WHERE engine = ? AND next_allowed = ?",
                (clock() + interval_s, engine, token),
            )

    def engine_health(self, engine: str) -> Health:
        row = self._conn.execute(
            "SELECT * FROM engine_health WHERE engine = ?", (engine,)
        ).fetchone()
        return _health(engine, row)

    def change_engine_health(self, engine: str, change: Callable[[Health], tuple[T, Health]]) -> T:
        """Apply `change` to `engine`'s breaker in one transaction; returns its first value."""
        with self.transaction() as conn:
            row = conn.execute("SELECT * FROM engine_health WHERE engine = ?", (engine,)).fetchone()
            before = _health(engine, row)
            result, after = change(before)
            if after != before:
                conn.execute(
                    "INSERT OR REPLACE INTO engine_health (engine, state, open_until,"
                    " consecutive_failures, trips, last_reason, trial_owner, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        engine,
                        after.state.value,
                        after.open_until,
                        after.consecutive_failures,
                        after.trips,
                        after.last_reason,
                        after.trial_owner,
                        utc_now(),
                    ),
                )
        return result

    def add_intervention(
        self, *, engine: str, url: str, query_id: int | None, kind: str, detail: str
    ) -> int:
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO intervention_queue (engine, url, query_id, kind, detail, status,"
                " created_at) VALUES (?, ?, ?, ?, ?, 'open', ?)",
                (engine, url, query_id, kind, detail, utc_now()),
            )
            return int(cursor.lastrowid)

    def open_interventions(self) -> list[sqlite3.Row]:
        return self._conn.execute(
            "SELECT * FROM intervention_queue WHERE status = 'open' ORDER BY id"
        ).fetchall()

    def resolve_intervention(self, intervention_id: int) -> bool:
        """Close an open intervention; False when there is no open one with that id."""
        with self.transaction() as conn:
            cursor = conn.execute(
                "UPDATE intervention_queue SET status = 'resolved', resolved_at = ?"
                " WHERE id = ? AND status = 'open'",
                (utc_now(), intervention_id),
            )
            return cursor.rowcount == 1

    def task_harvest_rate(self, task_id: str) -> float | None:
        """Mean harvest rate of the task's earlier queries that recorded one, or None."""
        row = self._conn.execute(
            "SELECT AVG(harvest_rate) FROM queries WHERE task_id = ? AND harvest_rate IS NOT NULL",
            (task_id,),
        ).fetchone()
        return None if row[0] is None else float(row[0])

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


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


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


def _health(engine: str, row: sqlite3.Row | None) -> Health:
    if row is None:
        return Health(engine=engine)
    return Health(
        engine=engine,
        state=BreakerState(row["state"]),
        open_until=row["open_until"],
        consecutive_failures=row["consecutive_failures"],
        trips=row["trips"],
        last_reason=row["last_reason"],
        trial_owner=row["trial_owner"],
    )
