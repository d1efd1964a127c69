"""SqliteStore: the ResultStore on one SQLite file (lyra_crawl.backends.protocols).

Each write is all-or-nothing on the database's worker thread (its own savepoint in a BEGIN
IMMEDIATE transaction shared with the writes queued beside it, or that transaction when alone);
a page is stored with its items in one, so a crash loses at most the pages in flight.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from lyra_crawl.backends import citation_saving, rows
from lyra_crawl.backends.invariants import check_entry_state, check_query_end
from lyra_crawl.backends.paper_saving import (
    LINKS_BY_URL,
    NEXT_GENERATION,
    PAPER_COLUMNS,
    PAPER_JSON_COLUMNS,
    TITLE_COLUMNS,
    PapersSave,
    PaperWrite,
    StoredTitles,
    UrlLinks,
)
from lyra_crawl.backends.records import (
    RESUMABLE_STATUSES,
    BatchEntry,
    BatchProgress,
    BatchRecord,
    BlockCount,
    CitationFetch,
    CitationGraph,
    DepthRates,
    EntrySpec,
    FoundPaper,
    Intervention,
    LandingPage,
    PageRecord,
    PaperToRead,
    QueryRecord,
    RequestBucket,
    StaleParser,
    StopReasonCount,
    StoredItem,
    StoredPage,
    StoredPaper,
    StoredQuery,
)
from lyra_crawl.backends.rows import instant, utc_now
from lyra_crawl.backends.sqlite.database import SqliteBackend, SqliteDatabase
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import BLOCK_LIMIT, CanonicalPaper, no_cyclic_gc

# A save's reads: the stored rows it read whole, and its writes.
_Matched = tuple[list[sqlite3.Row], list[PaperWrite]]

_PAPER_INSERT = (
    f"INSERT INTO papers (id, {', '.join(PAPER_COLUMNS)}, created_at, updated_at)"
    f" VALUES (?, {', '.join('?' for _ in PAPER_COLUMNS)}, ?, ?)"
)
_PAPER_UPDATE = (
    f"UPDATE papers SET {', '.join(f'{column} = ?' for column in PAPER_COLUMNS)}, updated_at = ?"
    " WHERE id = ?"
)
_ITEM_INSERT = (
    f"INSERT INTO serp_items ({', '.join(rows.ITEM_INSERT_COLUMNS)}, fetched_at)"
    f" VALUES ({', '.join('?' for _ in rows.ITEM_INSERT_COLUMNS)}, ?)"
    # Only a URL already stored for the query is skipped (a resumed crawl); any other
    # constraint (a missing page number, title) fails the whole page.
    " ON CONFLICT (query_id, normalized_url) DO NOTHING"
)
_FETCH_UPSERT = (
    f"INSERT INTO citation_fetches ({', '.join(rows.CITATION_FETCH_COLUMNS)}, fetched_at)"
    f" SELECT {', '.join('?' for _ in rows.CITATION_FETCH_COLUMNS)}, ?"
    " WHERE EXISTS (SELECT 1 FROM papers WHERE id = ?)"
    " ON CONFLICT (query_id, paper_id, source, relation) DO UPDATE SET"
    " links = citation_fetches.links + excluded.links, status = excluded.status,"
    " detail = excluded.detail, fetched_at = excluded.fetched_at"
)


class SqliteStore(SqliteBackend):
    def __init__(self, database: SqliteDatabase) -> None:
        super().__init__(database)
        # Read and written on the worker thread only, one save after another.
        self._paper_titles = StoredTitles()

    # -- queries ---------------------------------------------------------------------------

    async def start_query(self, record: QueryRecord) -> int:
        def insert(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO queries (query_text, normalized_query, task_id, engine, sources,"
                " time_range, region, serp_page, serp_max_pages, strategy, status, selection,"
                " job_id, batch_entry_id, pid, started_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
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
                    record.batch_entry_id,
                    os.getpid(),
                    utc_now(),
                ),
            )
            query_id = int(cursor.lastrowid or 0)
            if record.batch_entry_id is not None:
                conn.execute(
                    "UPDATE batch_entries SET query_id = ?, engine = ? WHERE id = ?",
                    (query_id, record.engine or None, record.batch_entry_id),
                )
            return query_id

        return await self._db.write(insert)

    async def resumable_query(self, record: QueryRecord, *, any_engine: bool) -> StoredQuery | None:
        return await self._db.read(
            lambda conn: rows.stored_query(
                conn.execute(
                    "SELECT * FROM queries WHERE status IN (?, ?) AND normalized_query = ?"
                    " AND (? OR engine = ?) AND sources = ? AND serp_page = ?"
                    " AND serp_max_pages = ? AND strategy = ? AND time_range IS ?"
                    " AND region IS ? ORDER BY id DESC LIMIT 1",
                    (
                        *(status.value for status in RESUMABLE_STATUSES),
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
            )
        )

    async def reopen_query(self, query_id: int) -> None:
        await self._db.write(
            lambda conn: conn.execute(
                "UPDATE queries SET status = 'running', pid = ?, finished_at = NULL WHERE id = ?",
                (os.getpid(), query_id),
            )
        )

    async def finish_query(
        self,
        query_id: int,
        *,
        status: str,
        stop_reasons: Mapping[str, str],
        errors: Mapping[str, str],
        relevance_threshold: float | None,
        entry_state: str | None = None,
        entry_detail: str = "",
        entry_detached: bool = False,
    ) -> StoredQuery:
        """Close the row; pages, items and the harvest rate (share of items whose relevance
        reaches the threshold) are counted from what was really stored."""

        def finish(conn: sqlite3.Connection) -> StoredQuery:
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
            row = conn.execute("SELECT * FROM queries WHERE id = ?", (query_id,)).fetchone()
            finished = rows.stored_query(row)
            assert finished is not None
            check_query_end(finished, dict(conn.execute(rows.PAGES_BY_SOURCE, (query_id,))))
            if entry_state is not None and finished.batch_entry_id is not None:
                _set_entry_state(
                    conn,
                    finished.batch_entry_id,
                    entry_state,
                    query_id,
                    entry_detail,
                    detached=entry_detached,
                )
            return finished

        return await self._db.write(finish)

    async def query(self, query_id: int) -> StoredQuery | None:
        return await self._db.read(
            lambda conn: rows.stored_query(
                conn.execute("SELECT * FROM queries WHERE id = ?", (query_id,)).fetchone()
            )
        )

    async def query_ids(self, *, task_id: str | None = None, last: int | None = None) -> list[int]:
        def select(conn: sqlite3.Connection) -> list[int]:
            if task_id is not None:
                found = conn.execute(
                    "SELECT id FROM queries WHERE task_id = ? ORDER BY id", (task_id,)
                ).fetchall()
                return [row[0] for row in found]
            found = conn.execute(
                "SELECT id FROM queries ORDER BY id DESC LIMIT ?", (last or -1,)
            ).fetchall()
            return sorted(row[0] for row in found)

        return await self._db.read(select)

    async def query_for_job(self, job_id: str) -> StoredQuery | None:
        return await self._db.read(
            lambda conn: rows.stored_query(
                conn.execute(
                    "SELECT * FROM queries WHERE job_id = ? ORDER BY id DESC LIMIT 1", (job_id,)
                ).fetchone()
            )
        )

    async def task_harvest_rate(self, task_id: str) -> float | None:
        """Mean harvest rate of the task's earlier queries that recorded one, or None."""
        value = await self._db.read(
            lambda conn: conn.execute(
                "SELECT AVG(harvest_rate) FROM queries"
                " WHERE task_id = ? AND harvest_rate IS NOT NULL",
                (task_id,),
            ).fetchone()[0]
        )
        return None if value is None else float(value)

    async def task_engines(self, task_id: str) -> dict[str, int]:
        return await self._db.read(
            lambda conn: {
                row[0]: row[1]
                for row in conn.execute(
                    "SELECT engine, COUNT(*) FROM queries WHERE task_id = ? GROUP BY engine",
                    (task_id,),
                )
            }
        )

    async def mark_cache_hit(self, query_id: int, answered_by: int) -> None:
        await self._db.write(
            lambda conn: conn.execute(
                "UPDATE queries SET cache_hit = 1, cached_from = ? WHERE id = ?",
                (answered_by, query_id),
            )
        )

    # -- pages and items -------------------------------------------------------------------

    async def store_page(self, page: PageRecord, items: Sequence[ResultItem]) -> int:
        fetched_at = utc_now()
        values = [(*rows.item_row(item), fetched_at) for item in items]

        def store(conn: sqlite3.Connection) -> int:
            before = conn.total_changes
            conn.executemany(_ITEM_INSERT, values)
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

        return await self._db.write(store)

    async def pages(self, query_id: int) -> list[StoredPage]:
        return await self._db.select(
            rows.stored_page,
            "SELECT * FROM serp_pages WHERE query_id = ? ORDER BY source, page_number",
            (query_id,),
        )

    async def items(self, query_id: int) -> list[StoredItem]:
        return await self._db.select(
            rows.stored_item,
            "SELECT * FROM serp_items WHERE query_id = ? ORDER BY source, rank",
            (query_id,),
        )

    async def earlier_urls(self, query_id: int) -> set[str]:
        return await self._db.read(
            lambda conn: {
                row[0]
                for row in conn.execute(
                    "SELECT DISTINCT i.normalized_url FROM serp_items i"
                    " JOIN queries q ON q.id = i.query_id"
                    " WHERE q.normalized_query ="
                    "   (SELECT normalized_query FROM queries WHERE id = ?)"
                    " AND q.id < ?",
                    (query_id, query_id),
                )
            }
        )

    async def repeated_url_count(self, query_id: int) -> int:
        """Items of this query whose normalized URL an earlier crawl of the same query stored."""
        return await self._db.read(
            lambda conn: conn.execute(
                "SELECT COUNT(*) FROM serp_items AS item"
                " JOIN queries AS this ON this.id = item.query_id"
                " WHERE item.query_id = ? AND EXISTS ("
                "   SELECT 1 FROM serp_items AS seen JOIN queries AS earlier"
                "   ON earlier.id = seen.query_id"
                "   WHERE seen.normalized_url = item.normalized_url AND earlier.id < this.id"
                "   AND earlier.normalized_query = this.normalized_query)",
                (query_id,),
            ).fetchone()[0]
        )

    async def stale_parsers(self) -> list[StaleParser]:
        return await self._db.select(rows.stale_parser, rows.STALE_PARSERS)

    # -- papers ----------------------------------------------------------------------------

    async def save_papers(
        self,
        query_id: int,
        papers: Sequence[tuple[CanonicalPaper, Sequence[str]]],
        fused_ranks: Mapping[str, int],
        attribution: Mapping[str, int],
        *,
        min_abstract_chars: int,
    ) -> dict[str, int]:
        now = utc_now()

        read: list[tuple[PapersSave, _Matched]] = []

        def read_ahead(conn: sqlite3.Connection) -> None:
            with no_cyclic_gc():
                save = PapersSave(
                    papers, min_abstract_chars=min_abstract_chars, titles=self._paper_titles
                )
                save.read_at(_generation(conn))
                read.append((save, _read(conn, save)))

        def save_them(conn: sqlite3.Connection) -> dict[str, int]:
            with no_cyclic_gc():
                # In one call, so that what the save made is freed before the collector is back
                # on: else its first collection scans all of it once (~15 ms a save of 1,000).
                _save_papers(conn, query_id, now, *read.pop())
            counts = _link_by_url(conn, query_id, attribution, now)
            conn.executemany(
                "UPDATE serp_items SET fused_rank = ? WHERE query_id = ? AND normalized_url = ?",
                [(rank, query_id, url) for url, rank in fused_ranks.items()],
            )
            conn.execute(
                "UPDATE queries SET attribution = ? WHERE id = ?",
                (json.dumps(counts, sort_keys=True), query_id),
            )
            return counts

        return await self._db.write(save_them, before=read_ahead)

    async def copy_paper_links(self, from_query_id: int, to_query_id: int) -> None:
        def copy(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE serp_items AS item SET (paper_id, fused_rank) = ("
                " SELECT paper_id, fused_rank FROM serp_items AS cached"
                " WHERE cached.query_id = ? AND cached.normalized_url = item.normalized_url)"
                " WHERE item.query_id = ?",
                (from_query_id, to_query_id),
            )
            conn.execute(
                "UPDATE queries SET attribution ="
                " (SELECT attribution FROM queries WHERE id = ?) WHERE id = ?",
                (from_query_id, to_query_id),
            )

        await self._db.write(copy)

    async def papers_of(self, query_id: int) -> list[StoredPaper]:
        return await self._db.select(
            rows.stored_paper,
            "SELECT * FROM papers WHERE id IN"
            " (SELECT paper_id FROM serp_items WHERE query_id = ?) ORDER BY id",
            (query_id,),
        )

    async def attribution_counts(self, query_id: int) -> dict[str, int]:
        return await self._db.read(
            lambda conn: {
                row[0]: row[1]
                for row in conn.execute(
                    "SELECT paper.attribution, COUNT(DISTINCT paper.id) FROM serp_items AS item"
                    " JOIN papers AS paper ON paper.id = item.paper_id"
                    " WHERE item.query_id = ? GROUP BY paper.attribution",
                    (query_id,),
                )
            }
        )

    async def papers_found(
        self,
        *,
        task_id: str | None = None,
        batch_id: int | None = None,
        query_id: int | None = None,
        after_id: int = 0,
        limit: int,
    ) -> list[FoundPaper]:
        scope = (after_id, task_id, batch_id, query_id)

        def read(conn: sqlite3.Connection) -> list[FoundPaper]:
            page = conn.execute(rows.FOUND_PAGE_IDS, (*scope, limit)).fetchall()
            if not page:
                return []
            last = (*scope, page[-1][0])
            papers = conn.execute(rows.FOUND_PAPERS, last)
            return rows.found_papers(papers, conn.execute(rows.FOUND_BY, last))

        return await self._db.read(read)

    # -- the citation graph ----------------------------------------------------------------

    async def citation_seeds(self, query_id: int, *, limit: int) -> list[StoredPaper]:
        return await self._db.select(rows.stored_paper, rows.CITATION_SEEDS, (query_id, limit))

    async def store_citation_page(
        self, fetch: CitationFetch, papers: Sequence[CanonicalPaper], *, min_abstract_chars: int
    ) -> int:
        now = utc_now()

        def store(conn: sqlite3.Connection) -> int:
            with no_cyclic_gc():
                save = PapersSave(
                    citation_saving.marked(papers),
                    min_abstract_chars=min_abstract_chars,
                    titles=self._paper_titles,
                )
                stored, writes = _matched(conn, save)
                citation_saving.keep_attributions(writes, stored)
                paper_ids = _written(conn, save, writes, now)
            fetched = replace(
                fetch, paper_id=citation_saving.row_now(fetch.paper_id, writes, paper_ids)
            )
            if not _paper_exists(conn, fetched.paper_id):
                return 0  # merged into another row by another save since it was asked for
            before = conn.total_changes
            conn.executemany(
                "INSERT INTO citations (citing_paper_id, cited_paper_id, source, fetched_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    (*pair, fetch.source, now)
                    for pair in citation_saving.edges(
                        fetched, citation_saving.rows_of_papers(writes, paper_ids)
                    )
                ],
            )
            added = conn.total_changes - before
            _upsert_fetches(conn, [fetched], now)
            return added

        return await self._db.write(store)

    async def end_citation_fetches(self, fetches: Sequence[CitationFetch]) -> None:
        now = utc_now()
        await self._db.write(lambda conn: _upsert_fetches(conn, fetches, now))

    async def citation_fetches(self, query_id: int) -> list[CitationFetch]:
        return await self._db.select(
            rows.citation_fetch,
            rows.CITATION_FETCHES,
            (query_id,),
        )

    async def citation_frontier(
        self, query_id: int, level: int, *, limit: int
    ) -> list[StoredPaper]:
        return await self._db.select(
            rows.stored_paper,
            rows.CITATION_FRONTIER,
            (query_id, level, query_id, level, query_id, limit),
        )

    async def task_citation_graph(self, task_id: str) -> CitationGraph:
        def read(conn: sqlite3.Connection) -> CitationGraph:
            edges = conn.execute(rows.TASK_CITATION_EDGES, (task_id, task_id))
            papers = conn.execute(rows.TASK_CITATION_PAPERS, (task_id, task_id))
            return rows.citation_graph(papers, edges)

        return await self._db.read(read)

    # -- landing pages (the papers spider) -------------------------------------------------

    async def papers_to_read(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[PaperToRead]:
        return await self._db.select(rows.paper_to_read, rows.PAPERS_TO_READ, (task_id, query_id))

    async def record_landing_page(self, page: LandingPage, abstract: str | None) -> None:
        now = utc_now()

        def record(conn: sqlite3.Connection) -> None:
            conn.execute(rows.LANDING_PAGE_UPSERT, (*rows.landing_page_values(page), now))
            if abstract is not None:
                conn.execute(rows.PAPER_FROM_LANDING, (abstract, now, page.paper_id))
                # A save that read the paper ahead of its transaction must read it again.
                conn.execute(NEXT_GENERATION)

        await self._db.write(record)

    async def landing_pages(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[LandingPage]:
        return await self._db.select(rows.landing_page, rows.LANDING_PAGES, (task_id, query_id))

    # -- search-level cache ----------------------------------------------------------------

    async def fresh_cache_entry(self, key: str, now: datetime) -> int | None:
        # julianday() compares the instants, whatever ISO 8601 form the writer used.
        row = await self._db.read(
            lambda conn: conn.execute(
                "SELECT query_id FROM serp_cache WHERE cache_key = ?"
                " AND julianday(expires_at) > julianday(?)",
                (key, instant(now)),
            ).fetchone()
        )
        return None if row is None else int(row[0])

    async def store_cache_entry(
        self, key: str, query_id: int, *, created_at: datetime, expires_at: datetime
    ) -> None:
        await self._db.write(
            lambda conn: conn.execute(
                "INSERT OR REPLACE INTO serp_cache (cache_key, query_id, created_at, expires_at)"
                " VALUES (?, ?, ?, ?)",
                (key, query_id, instant(created_at), instant(expires_at)),
            )
        )

    # -- interventions ---------------------------------------------------------------------

    async def add_intervention(
        self, *, engine: str, url: str, query_id: int | None, kind: str, detail: str
    ) -> int:
        return await self._db.write(
            lambda conn: int(
                conn.execute(
                    "INSERT INTO intervention_queue (engine, url, query_id, kind, detail, status,"
                    " created_at) VALUES (?, ?, ?, ?, ?, 'open', ?)",
                    (engine, url, query_id, kind, detail, utc_now()),
                ).lastrowid
                or 0
            )
        )

    async def open_interventions(self) -> list[Intervention]:
        return await self._db.select(
            rows.intervention, "SELECT * FROM intervention_queue WHERE status = 'open' ORDER BY id"
        )

    async def resolve_intervention(self, intervention_id: int) -> bool:
        return await self._db.write(
            lambda conn: (
                conn.execute(
                    "UPDATE intervention_queue SET status = 'resolved', resolved_at = ?"
                    " WHERE id = ? AND status = 'open'",
                    (utc_now(), intervention_id),
                ).rowcount
                == 1
            )
        )

    # -- batches ---------------------------------------------------------------------------

    async def create_batch(
        self, *, source: str, content_hash: str, entries: Sequence[EntrySpec]
    ) -> BatchRecord:
        created_at = utc_now()

        def create(conn: sqlite3.Connection) -> BatchRecord:
            batch_id = int(
                conn.execute(
                    "INSERT INTO batches (source, content_hash, created_at) VALUES (?, ?, ?)",
                    (source, content_hash, created_at),
                ).lastrowid
                or 0
            )
            conn.executemany(
                "INSERT INTO batch_entries (batch_id, position, query_text, arguments, state,"
                " detail, engine) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        batch_id,
                        entry.position,
                        entry.query_text,
                        json.dumps(dict(entry.arguments), sort_keys=True),
                        "rejected" if entry.rejected else "pending",
                        entry.rejected,
                        entry.engine,
                    )
                    for entry in entries
                ],
            )
            return BatchRecord(batch_id, source, content_hash, created_at, len(entries))

        return await self._db.write(create)

    async def batch(self, batch_id: int) -> BatchRecord | None:
        return await self._batch_where("b.id = ?", batch_id)

    async def batch_by_hash(self, content_hash: str) -> BatchRecord | None:
        return await self._batch_where("b.content_hash = ?", content_hash)

    async def _batch_where(self, condition: str, value: object) -> BatchRecord | None:
        row = await self._db.read(
            lambda conn: conn.execute(
                "SELECT b.id, b.source, b.content_hash, b.created_at,"
                " (SELECT COUNT(*) FROM batch_entries e WHERE e.batch_id = b.id) AS entries"
                f" FROM batches b WHERE {condition} ORDER BY b.id DESC LIMIT 1",
                (value,),
            ).fetchone()
        )
        return None if row is None else BatchRecord(*row)

    async def take_entries(
        self,
        batch_id: int,
        limit: int,
        *,
        owner: str,
        lease_s: float,
        skip_engines: Collection[str] = (),
    ) -> list[BatchEntry]:
        skipped = json.dumps(sorted(skip_engines))

        def take(conn: sqlite3.Connection) -> list[BatchEntry]:
            now = time.time()
            _expire_dead_leases(conn, batch_id)
            # Pending entries, then running ones whose lease ran out: two reads of the
            # (batch, state, position) index, each stopping at the limit. One read of both
            # states sorted them all on every take, a batch's every entry.
            ids = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM batch_entries WHERE batch_id = ? AND state = 'pending'"
                    f" AND {_NOT_SKIPPED} ORDER BY position LIMIT ?",
                    (batch_id, skipped, limit),
                )
            ]
            if len(ids) < limit:
                again = [
                    row[0]
                    for row in conn.execute(
                        "SELECT id FROM batch_entries WHERE batch_id = ? AND state = 'running'"
                        " AND (lease_until IS NULL OR lease_until < ?)"
                        f" AND {_NOT_SKIPPED} ORDER BY position LIMIT ?",
                        (batch_id, now, skipped, limit - len(ids)),
                    )
                ]
                # Their crawl stopped holding them (died, hung): its query is interrupted, so
                # the crawl taking the entry resumes it instead of storing its pages again.
                conn.executemany(
                    "UPDATE queries SET status = 'interrupted', finished_at = ? WHERE id ="
                    " (SELECT query_id FROM batch_entries WHERE id = ?) AND status = 'running'",
                    [(utc_now(), entry_id) for entry_id in again],
                )
                ids += again
            conn.executemany(
                "UPDATE batch_entries SET state = 'running', attempts = attempts + 1,"
                " lease_owner = ?, lease_until = ?, started_at = COALESCE(started_at, ?)"
                " WHERE id = ?",
                [(owner, now + lease_s, utc_now(), entry_id) for entry_id in ids],
            )
            return [
                rows.batch_entry(
                    conn.execute("SELECT * FROM batch_entries WHERE id = ?", (entry_id,)).fetchone()
                )
                for entry_id in ids
            ]

        return await self._db.write(take)

    async def pending_engines(self, batch_id: int) -> dict[str, int]:
        return await self._db.read(
            lambda conn: dict(
                conn.execute(
                    "SELECT COALESCE(engine, ''), COUNT(*) FROM batch_entries"
                    " WHERE batch_id = ? AND state = 'pending' GROUP BY 1",
                    (batch_id,),
                ).fetchall()
            )
        )

    async def finish_entry(
        self, entry_id: int, *, state: str, query_id: int | None, detail: str = ""
    ) -> None:
        await self._db.write(lambda conn: _set_entry_state(conn, entry_id, state, query_id, detail))

    async def renew_entry_leases(
        self, entry_ids: Sequence[int], *, owner: str, lease_s: float
    ) -> None:
        until = time.time() + lease_s
        await self._db.write(
            lambda conn: conn.executemany(
                "UPDATE batch_entries SET lease_until = ?"
                " WHERE id = ? AND state = 'running' AND lease_owner = ?",
                [(until, entry_id, owner) for entry_id in entry_ids],
            )
        )

    async def batch_entries(self, batch_id: int) -> list[BatchEntry]:
        return await self._db.select(
            rows.batch_entry,
            "SELECT * FROM batch_entries WHERE batch_id = ? ORDER BY position",
            (batch_id,),
        )

    # -- batch figures: progress display and batch report ----------------------------------
    # Each is a GROUP BY over the batch's queries, reached through the indexes on
    # batch_entries (batch_id, ...), queries (batch_entry_id), serp_pages (query_id, ...) and
    # intervention_queue (query_id): no query's rows are loaded one by one.

    async def batch_progress(self, batch_id: int) -> BatchProgress:
        return await self._db.read(lambda conn: _batch_progress(conn, batch_id))

    async def record_rate_waits(self, batch_id: int, owner: str, waits: Mapping[str, int]) -> None:
        await self._db.write(
            lambda conn: conn.executemany(
                "INSERT INTO batch_rate_waits (batch_id, owner, engine, waits) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (batch_id, owner, engine) DO UPDATE SET waits = excluded.waits",
                [(batch_id, owner, engine, n) for engine, n in waits.items()],
            )
        )

    async def batch_stop_reasons(self, batch_id: int) -> list[StopReasonCount]:
        return await self._db.select(
            lambda row: StopReasonCount(*row),
            "SELECT reason.key, reason.value, COUNT(*)"
            f" {_of_batch('json_each(q.stop_reason) AS reason')}"
            " GROUP BY reason.key, reason.value ORDER BY COUNT(*) DESC, reason.value, reason.key",
            (batch_id,),
        )

    async def batch_blocks(self, batch_id: int) -> list[BlockCount]:
        return await self._db.read(lambda conn: _batch_blocks(conn, batch_id))

    async def batch_requests_over_time(self, batch_id: int, bucket_s: int) -> list[RequestBucket]:
        """Requests per engine in buckets of `bucket_s` seconds, by the time each page was
        stored (its answer, parsed); cache replays left out."""
        return await self._db.select(
            lambda row: RequestBucket(*row),
            "SELECT p.source, CAST(strftime('%s', p.fetched_at) AS INTEGER) / ? * ? AS bucket,"
            f" COUNT(*) {_BATCH_PAGES} AND q.cache_hit = 0"
            " GROUP BY p.source, bucket ORDER BY bucket, p.source",
            (bucket_s, bucket_s, batch_id),
        )

    async def batch_depth_rates(self, batch_id: int) -> list[DepthRates]:
        """Novelty (the stored rate, else items kept / results) and harvest per source and page
        number, as moments over the batch's pages; cache replays left out."""

        return await self._db.read(
            lambda conn: rows.depth_rates(
                conn.execute(
                    "SELECT source, page_number, COUNT(*),"
                    " COUNT(novelty), SUM(novelty), SUM(novelty * novelty),"
                    " COUNT(harvest), SUM(harvest), SUM(harvest * harvest)"
                    " FROM (SELECT p.source, p.page_number, p.harvest_rate AS harvest,"
                    "   COALESCE(p.novelty_rate,"
                    "     CAST(p.items_stored AS REAL) / NULLIF(p.results, 0))"
                    f"   AS novelty {_BATCH_PAGES} AND q.cache_hit = 0)"
                    " GROUP BY source, page_number ORDER BY source, page_number",
                    (batch_id,),
                )
            )
        )

    async def batch_query_ids(self, batch_id: int) -> list[int]:
        """The batch's queries, in entry order."""
        return await self._db.select(
            lambda row: int(row[0]),
            f"SELECT q.id {_BATCH_QUERIES} ORDER BY e.position, q.id",
            (batch_id,),
        )

    async def batch_entries_in(
        self, batch_id: int, states: Sequence[str], *, limit: int
    ) -> tuple[list[BatchEntry], int]:
        """The first `limit` entries in one of `states`, by position, and how many there are."""
        marks = ", ".join("?" for _ in states)

        def select(conn: sqlite3.Connection) -> tuple[list[BatchEntry], int]:
            where = f"FROM batch_entries WHERE batch_id = ? AND state IN ({marks})"
            found = conn.execute(
                f"SELECT * {where} ORDER BY position LIMIT ?", (batch_id, *states, limit)
            )
            total = conn.execute(f"SELECT COUNT(*) {where}", (batch_id, *states)).fetchone()[0]
            return [rows.batch_entry(row) for row in found], total

        return await self._db.read(select)


def _of_batch(*joins: str) -> str:
    """FROM a batch's queries (the batch id is the first parameter), more tables joined."""
    joined = "".join(f" JOIN {table}" for table in joins)
    return (
        "FROM batch_entries AS e JOIN queries AS q ON q.batch_entry_id = e.id"
        f"{joined} WHERE e.batch_id = ?"
    )


_BATCH_QUERIES = _of_batch()
_BATCH_PAGES = _of_batch("serp_pages AS p ON p.query_id = q.id")


def _batch_progress(conn: sqlite3.Connection, batch_id: int) -> BatchProgress:
    return rows.batch_progress(
        batch_id,
        entry_states=conn.execute(
            "SELECT state, COUNT(*), MIN(started_at), MAX(finished_at) FROM batch_entries"
            " WHERE batch_id = ? GROUP BY state",
            (batch_id,),
        ),
        cached_entries=conn.execute(
            "SELECT COUNT(*) FROM batch_entries AS e JOIN queries AS q ON q.id = e.query_id"
            " WHERE e.batch_id = ? AND e.state = 'done' AND q.batch_entry_id IS NOT e.id",
            (batch_id,),
        ).fetchone()[0],
        pages=conn.execute(
            f"SELECT e.state, p.source, q.cache_hit, COUNT(*), SUM(p.items_stored) {_BATCH_PAGES}"
            " GROUP BY e.state, p.source, q.cache_hit",
            (batch_id,),
        ),
        blocks=_batch_blocks(conn, batch_id),
        queries=conn.execute(f"SELECT COUNT(*) {_BATCH_QUERIES}", (batch_id,)).fetchone()[0],
        rate_waits=conn.execute(
            "SELECT engine, SUM(waits) FROM batch_rate_waits WHERE batch_id = ? GROUP BY engine",
            (batch_id,),
        ),
    )


def _batch_blocks(conn: sqlite3.Connection, batch_id: int) -> list[BlockCount]:
    return [
        BlockCount(*row)
        for row in conn.execute(
            "SELECT i.engine, i.kind, COUNT(*)"
            f" {_of_batch('intervention_queue AS i ON i.query_id = q.id')}"
            " GROUP BY i.engine, i.kind ORDER BY i.engine, i.kind",
            (batch_id,),
        )
    ]


def _set_entry_state(
    conn: sqlite3.Connection,
    entry_id: int,
    state: str,
    query_id: int | None,
    detail: str,
    *,
    detached: bool = False,
) -> None:
    """An entry's new state; `detached`: without its query and the engine chosen for it."""
    check_entry_state(state, detail)
    finished_at = None if state in ("pending", "running") else utc_now()
    conn.execute(
        "UPDATE batch_entries SET state = ?,"
        " query_id = CASE WHEN ? THEN NULL ELSE COALESCE(?, query_id) END,"
        " engine = CASE WHEN ? THEN NULL ELSE engine END,"
        " detail = ?, finished_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ?",
        (state, detached, query_id, detached, detail, finished_at, entry_id),
    )


def _expire_dead_leases(conn: sqlite3.Connection, batch_id: int) -> None:
    """End at once the leases of running entries whose crawl, on this host, is gone (killed):
    a resumed batch takes them again without waiting for the lease to run out."""
    owners = conn.execute(
        "SELECT DISTINCT lease_owner FROM batch_entries WHERE batch_id = ? AND state = 'running'"
        " AND lease_owner LIKE ?",
        (batch_id, f"{socket.gethostname()}:%"),
    ).fetchall()
    conn.executemany(
        "UPDATE batch_entries SET lease_until = 0 WHERE batch_id = ? AND lease_owner = ?",
        [(batch_id, owner) for owner in rows.dead_lease_owners(owner for (owner,) in owners)],
    )


# An entry taken unless its engine is one of a JSON list of engines to skip.
# Entries without engine yet are named NO_ENGINE (''), as take_entries skips them.
_NOT_SKIPPED = "COALESCE(engine, '') NOT IN (SELECT value FROM json_each(?))"


def _paper_exists(conn: sqlite3.Connection, paper_id: int) -> bool:
    return conn.execute("SELECT 1 FROM papers WHERE id = ?", (paper_id,)).fetchone() is not None


def _upsert_fetches(conn: sqlite3.Connection, fetches: Sequence[CitationFetch], now: str) -> None:
    """Each fetch's row: created, or its links added to and its status and detail set. A fetch
    whose paper was merged into another row meanwhile is left out."""
    conn.executemany(
        _FETCH_UPSERT,
        [(*rows.citation_fetch_values(fetch), now, fetch.paper_id) for fetch in fetches],
    )


def _blocks(
    conn: sqlite3.Connection, identifier_keys: Sequence[int], title_keys: Sequence[int]
) -> dict[int, list[int] | None]:
    """The stored blocks of identifier keys, whole, and of title keys, None when full (keys by
    their hash; a key no paper has is absent)."""
    return {
        key: None if members is None else list(map(int, members.split(",")))
        for key, members in conn.execute(
            "SELECT block_hash, group_concat(paper_id) FROM paper_index_blocks"
            " WHERE block_hash IN (SELECT value FROM json_each(?)) GROUP BY block_hash"
            " UNION ALL"
            " SELECT block_hash, CASE WHEN COUNT(*) < ? THEN group_concat(paper_id) END"
            " FROM paper_index_blocks WHERE block_hash IN (SELECT value FROM json_each(?))"
            " GROUP BY block_hash",
            (json.dumps(list(identifier_keys)), BLOCK_LIMIT, json.dumps(list(title_keys))),
        )
    }


def _words(conn: sqlite3.Connection, words: Sequence[str]) -> list[tuple[str, str]]:
    """The (word, kind) rows of `words` known from stored records' author and venue fields."""
    return [
        (word, kind)
        for word, kind in conn.execute(
            "SELECT word, kind FROM paper_words WHERE word IN (SELECT value FROM json_each(?))",
            (json.dumps(list(words)),),
        )
    ]


def _papers(
    conn: sqlite3.Connection, columns: Sequence[str], ids: Sequence[int]
) -> list[sqlite3.Row]:
    return conn.execute(
        f"SELECT {', '.join(columns)} FROM papers WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ).fetchall()


def _matched(conn: sqlite3.Connection, save: PapersSave, ahead: _Matched | None = None) -> _Matched:
    """A save's start in its transaction and its reads: those made `ahead` of it if no save came
    between (backends.paper_saving), else made now."""
    fresh = save.start(conn.execute(NEXT_GENERATION).fetchone()[0])
    return ahead if ahead is not None and fresh else _read(conn, save)


def _generation(conn: sqlite3.Connection) -> int:
    """The store's paper index generation (0 before the first save)."""
    row = conn.execute("SELECT generation FROM paper_index_generation WHERE id = 1").fetchone()
    return 0 if row is None else int(row[0])


def _read(conn: sqlite3.Connection, save: PapersSave) -> _Matched:
    """A save's reads (backends.paper_saving), one statement each: the stored rows it reads
    whole, and its writes."""
    blocks = _blocks(conn, save.identifier_keys, save.title_keys)
    titled = _papers(conn, TITLE_COLUMNS, save.titled_ids(blocks))
    stored = _papers(conn, ("*",), save.candidate_ids(titled))
    return stored, save.writes(stored, _words(conn, save.title_words(stored)))


def _save_papers(
    conn: sqlite3.Connection, query_id: int, now: str, save: PapersSave, ahead: _Matched
) -> None:
    """Match and write a query's papers (`ahead`: as read before the transaction), and link its
    items to their rows."""
    _, writes = _matched(conn, save, ahead)
    paper_ids = _written(conn, save, writes, now)
    conn.executemany(
        "UPDATE serp_items SET paper_id = ? WHERE query_id = ? AND normalized_url = ?",
        [
            (paper_id, query_id, url)
            for paper_id, write in zip(paper_ids, writes, strict=True)
            for url in write.urls
        ],
    )


def _link_by_url(
    conn: sqlite3.Connection, query_id: int, attribution: Mapping[str, int], now: str
) -> dict[str, int]:
    """Link the query's results no paper of its own has to the paper other queries' results at
    their URL are (paper_saving.LINKS_BY_URL); the query's `attribution` with what it gained."""
    links = UrlLinks(conn.execute(LINKS_BY_URL, (query_id,)).fetchall())
    if not links.found:
        return dict(attribution)
    had = conn.execute(
        "SELECT DISTINCT paper_id FROM serp_items WHERE query_id = ? AND paper_id IS NOT NULL",
        (query_id,),
    ).fetchall()
    conn.executemany("UPDATE serp_items SET paper_id = ? WHERE id = ?", links.item_links)
    stored = conn.execute(
        "SELECT id, sources, attribution FROM papers WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(links.found_by)),),
    ).fetchall()
    conn.executemany(
        "UPDATE papers SET sources = ?, attribution = ?, updated_at = ? WHERE id = ?",
        [
            (json.dumps(paper["sources"]), paper["attribution"], now, paper["id"])
            for paper in links.paper_updates(
                (paper_id, json.loads(sources), attribution)
                for paper_id, sources, attribution in stored
            )
        ],
    )
    return links.attribution(attribution, (row[0] for row in had))


def _written(
    conn: sqlite3.Connection, save: PapersSave, writes: Sequence[PaperWrite], now: str
) -> list[int]:
    """Run a save's writes, its block memberships and its words; each write's row id."""
    paper_ids = _write_papers(conn, writes, now)
    conn.executemany(
        "INSERT OR IGNORE INTO paper_index_blocks (block_hash, paper_id) VALUES (?, ?)",
        save.written(paper_ids),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO paper_words (word, kind) VALUES (?, ?)", save.word_entries
    )
    return paper_ids


def _write_papers(conn: sqlite3.Connection, writes: Sequence[PaperWrite], now: str) -> list[int]:
    """Run a save's writes: rows merged into another have their items, block memberships,
    citations and landing pages moved and are deleted, stored rows updated, new ones inserted.
    Returns each write's row id."""
    for write in writes:
        if write.absorbed:
            gone = json.dumps(write.absorbed)
            for statement in (
                "UPDATE serp_items SET paper_id = ?"
                " WHERE paper_id IN (SELECT value FROM json_each(?))",
                # A block holding both keeps the kept row once.
                "UPDATE OR IGNORE paper_index_blocks SET paper_id = ?"
                " WHERE paper_id IN (SELECT value FROM json_each(?))",
                # A landing page asked for both keeps the kept row's answer.
                "UPDATE OR IGNORE landing_pages SET paper_id = ?"
                " WHERE paper_id IN (SELECT value FROM json_each(?))",
            ):
                conn.execute(statement, (write.row_id, gone))
            _move_citations(conn, write.row_id, gone)
            for table, column in (
                ("paper_index_blocks", "paper_id"),
                ("landing_pages", "paper_id"),
                ("papers", "id"),
            ):
                conn.execute(
                    f"DELETE FROM {table} WHERE {column} IN (SELECT value FROM json_each(?))",
                    (gone,),
                )
    conn.executemany(
        _PAPER_UPDATE,
        [[*_paper_values(w), now, w.row_id] for w in writes if w.row_id is not None],
    )
    # The write lock is held: the ids SQLite would give the new rows, given here in one go.
    (first,) = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM papers").fetchone()
    new_ids = iter(range(first, first + len(writes)))
    paper_ids = [w.row_id if w.row_id is not None else next(new_ids) for w in writes]
    conn.executemany(
        _PAPER_INSERT,
        [
            [paper_id, *_paper_values(w), now, now]
            for paper_id, w in zip(paper_ids, writes, strict=True)
            if w.row_id is None
        ],
    )
    return paper_ids


def _move_citations(conn: sqlite3.Connection, kept: int | None, gone: str) -> None:
    """The edges and fetched lists of rows merged into `kept` (`gone`, a JSON list) move to it;
    what it already has, and an edge to itself, go."""
    ids = "(SELECT value FROM json_each(:gone))"
    values = {"kept": kept, "gone": gone}
    conn.execute(
        "INSERT INTO citations (citing_paper_id, cited_paper_id, source, fetched_at)"
        f" SELECT CASE WHEN citing_paper_id IN {ids} THEN :kept ELSE citing_paper_id END,"
        f" CASE WHEN cited_paper_id IN {ids} THEN :kept ELSE cited_paper_id END,"
        f" source, fetched_at FROM citations"
        f" WHERE citing_paper_id IN {ids} OR cited_paper_id IN {ids} ON CONFLICT DO NOTHING",
        values,
    )
    conn.execute(
        f"DELETE FROM citations WHERE citing_paper_id IN {ids} OR cited_paper_id IN {ids}"
        " OR (citing_paper_id = :kept AND cited_paper_id = :kept)",
        values,
    )
    columns = ", ".join(rows.CITATION_FETCH_COLUMNS)
    conn.execute(
        f"INSERT INTO citation_fetches ({columns}, fetched_at)"
        f" SELECT {columns.replace('paper_id', ':kept')}, fetched_at FROM citation_fetches"
        f" WHERE paper_id IN {ids} ON CONFLICT DO NOTHING",
        values,
    )
    conn.execute(f"DELETE FROM citation_fetches WHERE paper_id IN {ids}", values)


def _paper_values(write: PaperWrite) -> list[object]:
    values = write.values
    return [
        _encode_sorted(values[column]) if column in PAPER_JSON_COLUMNS else values[column]
        for column in PAPER_COLUMNS
    ]


# json.dumps(value, sort_keys=True) without building an encoder for each value.
_encode_sorted = json.JSONEncoder(sort_keys=True).encode
