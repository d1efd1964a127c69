"""PostgresStore: the ResultStore on PostgreSQL (lyra_crawl.backends.protocols), one database
shared by every node of a cluster. Returns exactly what SqliteStore returns for the same calls.

Each method is one transaction on a pooled connection (database.py); a page is stored with its
items in one, its items' UNIQUE (query_id, normalized_url) skipping a URL already stored, as in
SQLite. Batch entries are taken with FOR UPDATE SKIP LOCKED under a lease by the server's clock,
so workers on several machines never take the same entry and a dead worker's entry is taken
again once its lease runs out.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

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
from lyra_crawl.backends.postgres.database import Connection, PostgresDatabase
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
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import BLOCK_LIMIT, CanonicalPaper, no_cyclic_gc

# pg_advisory_xact_lock key of paper upserts: "papr" in ASCII.
PAPERS_LOCK = 0x70617072

_PAPER_INSERT = (
    f"INSERT INTO papers (id, {', '.join(PAPER_COLUMNS)}, created_at, updated_at)"
    f" VALUES (%s, {', '.join('%s' for _ in PAPER_COLUMNS)}, now(), now())"
)
_PAPER_UPDATE = (
    f"UPDATE papers SET {', '.join(f'{column} = %s' for column in PAPER_COLUMNS)},"
    " updated_at = now() WHERE id = %s"
)
_ITEM_INSERT = (
    f"INSERT INTO serp_items ({', '.join(rows.ITEM_INSERT_COLUMNS)}, fetched_at)"
    f" VALUES ({', '.join('%s' for _ in rows.ITEM_INSERT_COLUMNS)}, now())"
    # Only a URL already stored for the query is skipped (a resumed crawl); any other
    # constraint (a missing page number, title) fails the whole page.
    " ON CONFLICT (query_id, normalized_url) DO NOTHING"
)
_FETCH_UPSERT = (
    f"INSERT INTO citation_fetches ({', '.join(rows.CITATION_FETCH_COLUMNS)}, fetched_at)"
    f" SELECT {', '.join('%s' for _ in rows.CITATION_FETCH_COLUMNS)}, now()"
    " WHERE EXISTS (SELECT 1 FROM papers WHERE id = %s)"
    " ON CONFLICT (query_id, paper_id, source, relation) DO UPDATE SET"
    " links = citation_fetches.links + excluded.links, status = excluded.status,"
    " detail = excluded.detail, fetched_at = excluded.fetched_at"
)


def _utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC instant (a naive one is local time, as SQLite reads it)."""
    return moment.astimezone(UTC)


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


async def _fetch(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()):
    """Every row `sql` selects, as tuples."""
    return await (await conn.execute(sql, params)).fetchall()


async def _one(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
    """The first column of the one row `sql` returns."""
    row = await (await conn.execute(sql, params)).fetchone()
    assert row is not None, sql
    return row[0]


async def _dicts(conn: Connection, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()):
    """Every row `sql` selects (or returns), by column name."""
    cursor = conn.cursor(row_factory=dict_row)
    await cursor.execute(sql, params)
    return await cursor.fetchall()


# A save's reads: the stored rows it read whole, and its writes.
_Matched = tuple[list[Any], list[PaperWrite]]


class PostgresStore:
    def __init__(self, database: PostgresDatabase) -> None:
        self._db = database
        # Used by one save at a time (`_saving`).
        self._paper_titles = StoredTitles()
        self._saving = asyncio.Lock()

    @property
    def url(self) -> str:
        return self._db.url

    async def close(self) -> None:
        await self._db.close()

    # -- queries ---------------------------------------------------------------------------

    async def start_query(self, record: QueryRecord) -> int:
        async with self._db.transaction() as conn:
            query_id = await _one(
                conn,
                "INSERT INTO queries (query_text, normalized_query, task_id, engine, sources,"
                " time_range, region, serp_page, serp_max_pages, strategy, status, selection,"
                " job_id, batch_entry_id, host, pid, started_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, 'running', %s, %s, %s, %s, %s,"
                " now()) RETURNING id",
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
                    _json(record.selection),
                    record.job_id,
                    record.batch_entry_id,
                    socket.gethostname(),
                    os.getpid(),
                ),
            )
            if record.batch_entry_id is not None:
                await conn.execute(
                    "UPDATE batch_entries SET query_id = %s, engine = %s WHERE id = %s",
                    (query_id, record.engine or None, record.batch_entry_id),
                )
            return int(query_id)

    async def resumable_query(self, record: QueryRecord, *, any_engine: bool) -> StoredQuery | None:
        return await self._query_where(
            "status = ANY(%s) AND normalized_query = %s AND (%s OR engine = %s)"
            " AND sources = %s AND serp_page = %s AND serp_max_pages = %s AND strategy = %s"
            " AND time_range IS NOT DISTINCT FROM %s AND region IS NOT DISTINCT FROM %s",
            (
                [status.value for status in RESUMABLE_STATUSES],
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
        )

    async def _query_where(self, condition: str, params: Sequence[Any]) -> StoredQuery | None:
        """The latest query meeting `condition`."""
        found = await self._db.select(
            rows.stored_query,
            f"SELECT * FROM queries WHERE {condition} ORDER BY id DESC LIMIT 1",
            params,
        )
        return found[0] if found else None

    async def reopen_query(self, query_id: int) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE queries SET status = 'running', host = %s, pid = %s, finished_at = NULL"
                " WHERE id = %s",
                (socket.gethostname(), os.getpid(), query_id),
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
        async with self._db.transaction() as conn:
            (row,) = await _dicts(
                conn,
                "UPDATE queries SET status = %(status)s, stop_reason = %(stop_reason)s,"
                " errors = %(errors)s,"
                " harvest_rate = (SELECT AVG((relevance >= %(threshold)s)::int::float8)"
                "   FROM serp_items WHERE query_id = %(id)s AND relevance IS NOT NULL),"
                " pages_fetched = (SELECT COUNT(*) FROM serp_pages WHERE query_id = %(id)s),"
                " items = (SELECT COUNT(*) FROM serp_items WHERE query_id = %(id)s),"
                " finished_at = now() WHERE id = %(id)s RETURNING *",
                {
                    "status": status,
                    "stop_reason": Jsonb(dict(stop_reasons)),
                    "errors": Jsonb(dict(errors)) if errors else None,
                    "threshold": relevance_threshold,
                    "id": query_id,
                },
            )
            finished = rows.stored_query(row)
            assert finished is not None
            pages = await _fetch(conn, rows.postgres(rows.PAGES_BY_SOURCE), (query_id,))
            check_query_end(finished, dict(pages))
            if entry_state is not None and finished.batch_entry_id is not None:
                await _set_entry_state(
                    conn,
                    finished.batch_entry_id,
                    entry_state,
                    query_id,
                    entry_detail,
                    detached=entry_detached,
                )
            return finished

    async def query(self, query_id: int) -> StoredQuery | None:
        return await self._query_where("id = %s", (query_id,))

    async def query_ids(self, *, task_id: str | None = None, last: int | None = None) -> list[int]:
        if task_id is not None:
            return await self._db.select(
                lambda row: int(row["id"]),
                "SELECT id FROM queries WHERE task_id = %s ORDER BY id",
                (task_id,),
            )
        found = await self._db.select(
            lambda row: int(row["id"]),
            "SELECT id FROM queries ORDER BY id DESC LIMIT %s",
            (last or None,),
        )
        return sorted(found)

    async def query_for_job(self, job_id: str) -> StoredQuery | None:
        return await self._query_where("job_id = %s", (job_id,))

    async def task_harvest_rate(self, task_id: str) -> float | None:
        """Mean harvest rate of the task's earlier queries that recorded one, or None."""
        value = await self._db.value(
            "SELECT AVG(harvest_rate) FROM queries WHERE task_id = %s AND harvest_rate IS NOT NULL",
            (task_id,),
        )
        return None if value is None else float(value)

    async def task_engines(self, task_id: str) -> dict[str, int]:
        async with self._db.transaction() as conn:
            found = await _fetch(
                conn,
                "SELECT engine, COUNT(*) FROM queries WHERE task_id = %s GROUP BY engine",
                (task_id,),
            )
        return {engine: count for engine, count in found}

    async def mark_cache_hit(self, query_id: int, answered_by: int) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE queries SET cache_hit = true, cached_from = %s WHERE id = %s",
                (answered_by, query_id),
            )

    # -- pages and items -------------------------------------------------------------------

    async def store_page(self, page: PageRecord, items: Sequence[ResultItem]) -> int:
        values = [rows.item_row(item, encode_list=Jsonb) for item in items]
        async with self._db.transaction() as conn:
            stored = 0
            if values:
                cursor = conn.cursor()
                await cursor.executemany(_ITEM_INSERT, values)
                stored = cursor.rowcount  # the sum over the rows: those inserted, not skipped
            await conn.execute(
                "INSERT INTO serp_pages (query_id, source, page_number, outcome, results,"
                " items_stored, novelty_rate, harvest_rate, url, fetched_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, now())"
                " ON CONFLICT (query_id, source, page_number) DO UPDATE SET"
                " outcome = EXCLUDED.outcome, results = EXCLUDED.results,"
                " items_stored = EXCLUDED.items_stored, novelty_rate = EXCLUDED.novelty_rate,"
                " harvest_rate = EXCLUDED.harvest_rate, url = EXCLUDED.url,"
                " fetched_at = EXCLUDED.fetched_at",
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
                ),
            )
            return stored

    async def pages(self, query_id: int) -> list[StoredPage]:
        return await self._db.select(
            rows.stored_page,
            "SELECT * FROM serp_pages WHERE query_id = %s ORDER BY source, page_number",
            (query_id,),
        )

    async def items(self, query_id: int) -> list[StoredItem]:
        return await self._db.select(
            rows.stored_item,
            "SELECT * FROM serp_items WHERE query_id = %s ORDER BY source, rank",
            (query_id,),
        )

    async def earlier_urls(self, query_id: int) -> set[str]:
        found = await self._db.select(
            lambda row: str(row["normalized_url"]),
            "SELECT DISTINCT i.normalized_url FROM serp_items i"
            " JOIN queries q ON q.id = i.query_id"
            " WHERE q.normalized_query ="
            "   (SELECT normalized_query FROM queries WHERE id = %(id)s)"
            " AND q.id < %(id)s",
            {"id": query_id},
        )
        return set(found)

    async def repeated_url_count(self, query_id: int) -> int:
        """Items of this query whose normalized URL an earlier crawl of the same query stored."""
        return int(
            await self._db.value(
                "SELECT COUNT(*) FROM serp_items AS item"
                " JOIN queries AS this ON this.id = item.query_id"
                " WHERE item.query_id = %s AND EXISTS ("
                "   SELECT 1 FROM serp_items AS seen JOIN queries AS earlier"
                "   ON earlier.id = seen.query_id"
                "   WHERE seen.normalized_url = item.normalized_url AND earlier.id < this.id"
                "   AND earlier.normalized_query = this.normalized_query)",
                (query_id,),
            )
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
        # One save of this process at a time (they share the titles kept), its reads and
        # matching ahead of the papers lock, which every node's saves take in turn, then the
        # writes under it (backends.paper_saving).
        async with self._saving:
            with no_cyclic_gc():
                save = PapersSave(
                    papers, min_abstract_chars=min_abstract_chars, titles=self._paper_titles
                )
                ahead = await self._read_ahead(save)
            async with self._db.transaction() as conn:
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PAPERS_LOCK,))
                with no_cyclic_gc():
                    _, writes = await _matched(conn, save, ahead)
                    paper_ids = await _written(conn, save, writes)
                cursor = conn.cursor()
                await cursor.executemany(
                    "UPDATE serp_items SET paper_id = %s"
                    " WHERE query_id = %s AND normalized_url = %s",
                    [
                        (paper_id, query_id, url)
                        for paper_id, write in zip(paper_ids, writes, strict=True)
                        for url in write.urls
                    ],
                )
                counts = await _link_by_url(conn, query_id, attribution)
                await cursor.executemany(
                    "UPDATE serp_items SET fused_rank = %s"
                    " WHERE query_id = %s AND normalized_url = %s",
                    [(rank, query_id, url) for url, rank in fused_ranks.items()],
                )
                await conn.execute(
                    "UPDATE queries SET attribution = %s WHERE id = %s", (Jsonb(counts), query_id)
                )
        return counts

    async def _read_ahead(self, save: PapersSave) -> _Matched:
        """A save's reads and matching outside the papers lock, at the generation they read."""
        async with self._db.transaction() as conn:
            save.read_at(await _generation(conn))
            return await _read(conn, save)

    async def copy_paper_links(self, from_query_id: int, to_query_id: int) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE serp_items AS item SET (paper_id, fused_rank) = ("
                " SELECT paper_id, fused_rank FROM serp_items AS cached"
                " WHERE cached.query_id = %s AND cached.normalized_url = item.normalized_url)"
                " WHERE item.query_id = %s",
                (from_query_id, to_query_id),
            )
            await conn.execute(
                "UPDATE queries SET attribution ="
                " (SELECT attribution FROM queries WHERE id = %s) WHERE id = %s",
                (from_query_id, to_query_id),
            )

    async def papers_of(self, query_id: int) -> list[StoredPaper]:
        return await self._db.select(
            rows.stored_paper,
            "SELECT * FROM papers WHERE id IN"
            " (SELECT paper_id FROM serp_items WHERE query_id = %s) ORDER BY id",
            (query_id,),
        )

    async def attribution_counts(self, query_id: int) -> dict[str, int]:
        async with self._db.transaction() as conn:
            found = await _fetch(
                conn,
                "SELECT paper.attribution, COUNT(DISTINCT paper.id) FROM serp_items AS item"
                " JOIN papers AS paper ON paper.id = item.paper_id"
                " WHERE item.query_id = %s GROUP BY paper.attribution",
                (query_id,),
            )
        return {attribution: count for attribution, count in found}

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
        async with self._db.transaction() as conn:
            page = await _fetch(conn, rows.postgres(rows.FOUND_PAGE_IDS), (*scope, limit))
            if not page:
                return []
            last = (*scope, page[-1][0])
            papers = await _dicts(conn, rows.postgres(rows.FOUND_PAPERS), last)
            found_by = await _dicts(conn, rows.postgres(rows.FOUND_BY), last)
        return rows.found_papers(papers, found_by)

    # -- the citation graph ----------------------------------------------------------------

    async def citation_seeds(self, query_id: int, *, limit: int) -> list[StoredPaper]:
        return await self._db.select(
            rows.stored_paper, rows.postgres(rows.CITATION_SEEDS), (query_id, limit)
        )

    async def store_citation_page(
        self, fetch: CitationFetch, papers: Sequence[CanonicalPaper], *, min_abstract_chars: int
    ) -> int:
        async with self._saving, self._db.transaction() as conn:
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PAPERS_LOCK,))
            with no_cyclic_gc():
                save = PapersSave(
                    citation_saving.marked(papers),
                    min_abstract_chars=min_abstract_chars,
                    titles=self._paper_titles,
                )
                stored, writes = await _matched(conn, save)
                citation_saving.keep_attributions(writes, stored)
                paper_ids = await _written(conn, save, writes)
            fetched = replace(
                fetch, paper_id=citation_saving.row_now(fetch.paper_id, writes, paper_ids)
            )
            if not await _fetch(conn, "SELECT 1 FROM papers WHERE id = %s", (fetched.paper_id,)):
                return 0  # merged into another row by another save since it was asked for
            added = 0
            for citing, cited in citation_saving.edges(
                fetched, citation_saving.rows_of_papers(writes, paper_ids)
            ):
                cursor = await conn.execute(
                    "INSERT INTO citations (citing_paper_id, cited_paper_id, source, fetched_at)"
                    " VALUES (%s, %s, %s, now()) ON CONFLICT DO NOTHING",
                    (citing, cited, fetch.source),
                )
                added += cursor.rowcount
            await _upsert_fetches(conn, [fetched])
            return added

    async def end_citation_fetches(self, fetches: Sequence[CitationFetch]) -> None:
        async with self._db.transaction() as conn:
            await _upsert_fetches(conn, fetches)

    async def citation_fetches(self, query_id: int) -> list[CitationFetch]:
        return await self._db.select(
            rows.citation_fetch,
            rows.postgres(rows.CITATION_FETCHES),
            (query_id,),
        )

    async def citation_frontier(
        self, query_id: int, level: int, *, limit: int
    ) -> list[StoredPaper]:
        return await self._db.select(
            rows.stored_paper,
            rows.postgres(rows.CITATION_FRONTIER),
            (query_id, level, query_id, level, query_id, limit),
        )

    async def task_citation_graph(self, task_id: str) -> CitationGraph:
        async with self._db.transaction() as conn:
            edges = await _dicts(conn, rows.postgres(rows.TASK_CITATION_EDGES), (task_id,) * 2)
            papers = await _dicts(conn, rows.postgres(rows.TASK_CITATION_PAPERS), (task_id,) * 2)
        return rows.citation_graph(papers, edges)

    # -- landing pages (the papers spider) -------------------------------------------------

    async def papers_to_read(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[PaperToRead]:
        return await self._db.select(
            rows.paper_to_read, rows.postgres(rows.PAPERS_TO_READ), (task_id, query_id)
        )

    async def record_landing_page(self, page: LandingPage, abstract: str | None) -> None:
        async with self._db.transaction() as conn:
            if abstract is not None:
                # A save in progress read the paper and writes it whole: after it, not between;
                # one that read it ahead of the lock must read it again. Taken first, as a save
                # takes it before the landing pages it moves: else each would wait for the other.
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (PAPERS_LOCK,))
            # The server's clock, as for every timestamp in PostgreSQL.
            now = await _one(conn, "SELECT now()")
            await conn.execute(
                rows.postgres(rows.LANDING_PAGE_UPSERT), (*rows.landing_page_values(page), now)
            )
            if abstract is not None:
                await conn.execute(
                    rows.postgres(rows.PAPER_FROM_LANDING), (abstract, now, page.paper_id)
                )
                await conn.execute(NEXT_GENERATION)

    async def landing_pages(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[LandingPage]:
        return await self._db.select(
            rows.landing_page, rows.postgres(rows.LANDING_PAGES), (task_id, query_id)
        )

    # -- search-level cache ----------------------------------------------------------------

    async def fresh_cache_entry(self, key: str, now: datetime) -> int | None:
        value = await self._db.value(
            "SELECT query_id FROM serp_cache WHERE cache_key = %s AND expires_at > %s",
            (key, _utc(now)),
        )
        return None if value is None else int(value)

    async def store_cache_entry(
        self, key: str, query_id: int, *, created_at: datetime, expires_at: datetime
    ) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO serp_cache (cache_key, query_id, created_at, expires_at)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (cache_key) DO UPDATE SET"
                " query_id = EXCLUDED.query_id, created_at = EXCLUDED.created_at,"
                " expires_at = EXCLUDED.expires_at",
                (key, query_id, _utc(created_at), _utc(expires_at)),
            )

    # -- interventions ---------------------------------------------------------------------

    async def add_intervention(
        self, *, engine: str, url: str, query_id: int | None, kind: str, detail: str
    ) -> int:
        async with self._db.transaction() as conn:
            return int(
                await _one(
                    conn,
                    "INSERT INTO intervention_queue (engine, url, query_id, kind, detail, status,"
                    " created_at) VALUES (%s, %s, %s, %s, %s, 'open', now()) RETURNING id",
                    (engine, url, query_id, kind, detail),
                )
            )

    async def open_interventions(self) -> list[Intervention]:
        return await self._db.select(
            rows.intervention,
            "SELECT * FROM intervention_queue WHERE status = 'open' ORDER BY id",
        )

    async def resolve_intervention(self, intervention_id: int) -> bool:
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE intervention_queue SET status = 'resolved', resolved_at = now()"
                " WHERE id = %s AND status = 'open'",
                (intervention_id,),
            )
            return cursor.rowcount == 1

    # -- batches ---------------------------------------------------------------------------

    async def create_batch(
        self, *, source: str, content_hash: str, entries: Sequence[EntrySpec]
    ) -> BatchRecord:
        async with self._db.transaction() as conn:
            ((batch_id, created_at),) = await _fetch(
                conn,
                "INSERT INTO batches (source, content_hash, created_at) VALUES (%s, %s, now())"
                " RETURNING id, created_at",
                (source, content_hash),
            )
            await conn.cursor().executemany(
                "INSERT INTO batch_entries (batch_id, position, query_text, arguments, state,"
                " detail, engine) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        batch_id,
                        entry.position,
                        entry.query_text,
                        Jsonb(dict(entry.arguments)),
                        "rejected" if entry.rejected else "pending",
                        entry.rejected,
                        entry.engine,
                    )
                    for entry in entries
                ],
            )
        return BatchRecord(batch_id, source, content_hash, created_at, len(entries))

    async def batch(self, batch_id: int) -> BatchRecord | None:
        return await self._batch_where("b.id = %s", batch_id)

    async def batch_by_hash(self, content_hash: str) -> BatchRecord | None:
        return await self._batch_where("b.content_hash = %s", content_hash)

    async def _batch_where(self, condition: str, value: object) -> BatchRecord | None:
        async with self._db.transaction() as conn:
            found = await _fetch(
                conn,
                "SELECT b.id, b.source, b.content_hash, b.created_at,"
                " (SELECT COUNT(*) FROM batch_entries e WHERE e.batch_id = b.id) AS entries"
                f" FROM batches b WHERE {condition} ORDER BY b.id DESC LIMIT 1",
                (value,),
            )
        return BatchRecord(*found[0]) if found else None

    async def take_entries(
        self,
        batch_id: int,
        limit: int,
        *,
        owner: str,
        lease_s: float,
        skip_engines: Collection[str] = (),
    ) -> list[BatchEntry]:
        skipped = sorted(skip_engines)
        async with self._db.transaction() as conn:
            await _expire_dead_leases(conn, batch_id)
            # Pending entries, then running ones whose lease ran out, each read through the
            # (batch, state, position) index up to the limit (one read of both states sorted
            # every entry of the batch). SKIP LOCKED: an entry another worker is taking right
            # now is left to it.
            ids = [
                entry_id
                for (entry_id,) in await _fetch(
                    conn,
                    "SELECT id FROM batch_entries WHERE batch_id = %s AND state = 'pending'"
                    f" AND {_NOT_SKIPPED} ORDER BY position LIMIT %s FOR UPDATE SKIP LOCKED",
                    (batch_id, skipped, limit),
                )
            ]
            if len(ids) < limit:
                again = [
                    entry_id
                    for (entry_id,) in await _fetch(
                        conn,
                        "SELECT id FROM batch_entries WHERE batch_id = %s AND state = 'running'"
                        " AND (lease_until IS NULL OR lease_until < clock_timestamp())"
                        f" AND {_NOT_SKIPPED} ORDER BY position LIMIT %s FOR UPDATE SKIP LOCKED",
                        (batch_id, skipped, limit - len(ids)),
                    )
                ]
                # Their crawl stopped holding them (died, hung): its query is interrupted, so
                # the crawl taking the entry resumes it instead of storing its pages again.
                await conn.execute(
                    "UPDATE queries SET status = 'interrupted', finished_at = now() WHERE id IN"
                    " (SELECT query_id FROM batch_entries WHERE id = ANY(%s))"
                    " AND status = 'running'",
                    (again,),
                )
                ids += again
            taken = await _dicts(
                conn,
                "UPDATE batch_entries SET state = 'running', attempts = attempts + 1,"
                " lease_owner = %s, lease_until = clock_timestamp() + make_interval(secs => %s),"
                " started_at = COALESCE(started_at, now()) WHERE id = ANY(%s) RETURNING *",
                (owner, lease_s, ids),
            )
        by_id = {row["id"]: rows.batch_entry(row) for row in taken}
        return [by_id[entry_id] for entry_id in ids]

    async def pending_engines(self, batch_id: int) -> dict[str, int]:
        async with self._db.transaction() as conn:
            found = await _fetch(
                conn,
                "SELECT COALESCE(engine, ''), COUNT(*) FROM batch_entries"
                " WHERE batch_id = %s AND state = 'pending' GROUP BY 1",
                (batch_id,),
            )
        return {engine: count for engine, count in found}

    async def finish_entry(
        self, entry_id: int, *, state: str, query_id: int | None, detail: str = ""
    ) -> None:
        async with self._db.transaction() as conn:
            await _set_entry_state(conn, entry_id, state, query_id, detail)

    async def renew_entry_leases(
        self, entry_ids: Sequence[int], *, owner: str, lease_s: float
    ) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE batch_entries SET lease_until = clock_timestamp()"
                " + make_interval(secs => %s)"
                " WHERE id = ANY(%s) AND state = 'running' AND lease_owner = %s",
                (lease_s, list(entry_ids), owner),
            )

    async def batch_entries(self, batch_id: int) -> list[BatchEntry]:
        return await self._db.select(
            rows.batch_entry,
            "SELECT * FROM batch_entries WHERE batch_id = %s ORDER BY position",
            (batch_id,),
        )

    # -- batch figures: progress display and batch report ----------------------------------
    # Each is a GROUP BY over the batch's queries, reached through the indexes on
    # batch_entries (batch_id, ...), queries (batch_entry_id), serp_pages (query_id, ...) and
    # intervention_queue (query_id).

    async def batch_progress(self, batch_id: int) -> BatchProgress:
        async with self._db.transaction() as conn:
            return rows.batch_progress(
                batch_id,
                entry_states=await _fetch(
                    conn,
                    "SELECT state, COUNT(*), MIN(started_at), MAX(finished_at)"
                    " FROM batch_entries WHERE batch_id = %s GROUP BY state ORDER BY state",
                    (batch_id,),
                ),
                cached_entries=await _one(
                    conn,
                    "SELECT COUNT(*) FROM batch_entries AS e JOIN queries AS q"
                    " ON q.id = e.query_id WHERE e.batch_id = %s AND e.state = 'done'"
                    " AND q.batch_entry_id IS DISTINCT FROM e.id",
                    (batch_id,),
                ),
                pages=await _fetch(
                    conn,
                    "SELECT e.state, p.source, q.cache_hit, COUNT(*), SUM(p.items_stored)"
                    f" {_BATCH_PAGES} GROUP BY e.state, p.source, q.cache_hit",
                    (batch_id,),
                ),
                blocks=await _batch_blocks(conn, batch_id),
                queries=await _one(conn, f"SELECT COUNT(*) {_BATCH_QUERIES}", (batch_id,)),
                rate_waits=await _fetch(
                    conn,
                    "SELECT engine, SUM(waits) FROM batch_rate_waits WHERE batch_id = %s"
                    " GROUP BY engine",
                    (batch_id,),
                ),
            )

    async def record_rate_waits(self, batch_id: int, owner: str, waits: Mapping[str, int]) -> None:
        async with self._db.transaction() as conn:
            await conn.cursor().executemany(
                "INSERT INTO batch_rate_waits (batch_id, owner, engine, waits)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (batch_id, owner, engine)"
                " DO UPDATE SET waits = EXCLUDED.waits",
                [(batch_id, owner, engine, n) for engine, n in waits.items()],
            )

    async def batch_stop_reasons(self, batch_id: int) -> list[StopReasonCount]:
        async with self._db.transaction() as conn:
            found = await _fetch(
                conn,
                "SELECT reason.key, reason.value, COUNT(*)"
                f" {_of_batch('LATERAL jsonb_each_text(q.stop_reason) AS reason ON true')}"
                " GROUP BY reason.key, reason.value"
                ' ORDER BY COUNT(*) DESC, reason.value COLLATE "C", reason.key COLLATE "C"',
                (batch_id,),
            )
        return [StopReasonCount(*row) for row in found]

    async def batch_blocks(self, batch_id: int) -> list[BlockCount]:
        async with self._db.transaction() as conn:
            return await _batch_blocks(conn, batch_id)

    async def batch_requests_over_time(self, batch_id: int, bucket_s: int) -> list[RequestBucket]:
        """Requests per engine in buckets of `bucket_s` seconds, by the time each page was
        stored (its answer, parsed); cache replays left out."""
        async with self._db.transaction() as conn:
            found = await _fetch(
                conn,
                "SELECT p.source,"
                " floor(extract(epoch FROM p.fetched_at))::bigint / %s * %s AS bucket,"
                f" COUNT(*) {_BATCH_PAGES} AND NOT q.cache_hit"
                " GROUP BY p.source, bucket ORDER BY bucket, p.source",
                (bucket_s, bucket_s, batch_id),
            )
        return [RequestBucket(*row) for row in found]

    async def batch_depth_rates(self, batch_id: int) -> list[DepthRates]:
        """Novelty (the stored rate, else items kept / results) and harvest per source and page
        number, as moments over the batch's pages; cache replays left out."""
        async with self._db.transaction() as conn:
            return rows.depth_rates(
                await _fetch(
                    conn,
                    "SELECT source, page_number, COUNT(*),"
                    " COUNT(novelty), SUM(novelty), SUM(novelty * novelty),"
                    " COUNT(harvest), SUM(harvest), SUM(harvest * harvest)"
                    " FROM (SELECT p.source, p.page_number, p.harvest_rate AS harvest,"
                    "   COALESCE(p.novelty_rate, p.items_stored::float8 / NULLIF(p.results, 0))"
                    f"   AS novelty {_BATCH_PAGES} AND NOT q.cache_hit) AS page"
                    " GROUP BY source, page_number ORDER BY source, page_number",
                    (batch_id,),
                )
            )

    async def batch_query_ids(self, batch_id: int) -> list[int]:
        """The batch's queries, in entry order."""
        return await self._db.select(
            lambda row: int(row["id"]),
            f"SELECT q.id {_BATCH_QUERIES} ORDER BY e.position, q.id",
            (batch_id,),
        )

    async def batch_entries_in(
        self, batch_id: int, states: Sequence[str], *, limit: int
    ) -> tuple[list[BatchEntry], int]:
        """The first `limit` entries in one of `states`, by position, and how many there are."""
        where = "FROM batch_entries WHERE batch_id = %s AND state = ANY(%s)"
        async with self._db.transaction() as conn:
            found = await _dicts(
                conn,
                f"SELECT * {where} ORDER BY position LIMIT %s",
                (batch_id, list(states), limit),
            )
            total = await _one(conn, f"SELECT COUNT(*) {where}", (batch_id, list(states)))
        return [rows.batch_entry(row) for row in found], total


# An entry taken unless its engine is one of a list of engines to skip.
# Entries without engine yet are named NO_ENGINE (''), as take_entries skips them.
_NOT_SKIPPED = "COALESCE(engine, '') <> ALL(%s)"


def _of_batch(*joins: str) -> str:
    """FROM a batch's queries (the batch id is the first parameter), more tables joined."""
    joined = "".join(f" JOIN {table}" for table in joins)
    return (
        "FROM batch_entries AS e JOIN queries AS q ON q.batch_entry_id = e.id"
        f"{joined} WHERE e.batch_id = %s"
    )


_BATCH_QUERIES = _of_batch()
_BATCH_PAGES = _of_batch("serp_pages AS p ON p.query_id = q.id")


async def _batch_blocks(conn: Connection, batch_id: int) -> list[BlockCount]:
    found = await _fetch(
        conn,
        "SELECT i.engine, i.kind, COUNT(*)"
        f" {_of_batch('intervention_queue AS i ON i.query_id = q.id')}"
        " GROUP BY i.engine, i.kind ORDER BY i.engine, i.kind",
        (batch_id,),
    )
    return [BlockCount(*row) for row in found]


async def _set_entry_state(
    conn: Connection,
    entry_id: int,
    state: str,
    query_id: int | None,
    detail: str,
    *,
    detached: bool = False,
) -> None:
    """An entry's new state; `detached`: without its query and the engine chosen for it."""
    check_entry_state(state, detail)
    await conn.execute(
        "UPDATE batch_entries SET state = %(state)s,"
        " query_id = CASE WHEN %(detached)s THEN NULL ELSE COALESCE(%(query)s, query_id) END,"
        " engine = CASE WHEN %(detached)s THEN NULL ELSE engine END, detail = %(detail)s,"
        " finished_at = CASE WHEN %(finished)s THEN now() END, lease_owner = NULL,"
        " lease_until = NULL WHERE id = %(id)s",
        {
            "state": state,
            "detached": detached,
            "query": query_id,
            "detail": detail,
            "finished": state not in ("pending", "running"),
            "id": entry_id,
        },
    )


async def _expire_dead_leases(conn: Connection, batch_id: int) -> None:
    """End at once the leases of running entries whose crawl, on this host, is gone (killed):
    a resumed batch takes them again without waiting for the lease to run out."""
    owners = await _fetch(
        conn,
        "SELECT DISTINCT lease_owner FROM batch_entries WHERE batch_id = %s"
        " AND state = 'running' AND lease_owner LIKE %s",
        (batch_id, f"{socket.gethostname()}:%"),
    )
    dead = rows.dead_lease_owners(owner for (owner,) in owners)
    if dead:
        await conn.execute(
            "UPDATE batch_entries SET lease_until = NULL WHERE batch_id = %s"
            " AND lease_owner = ANY(%s)",
            (batch_id, dead),
        )


async def _upsert_fetches(conn: Connection, fetches: Sequence[CitationFetch]) -> None:
    """Each fetch's row: created, or its links added to and its status and detail set. A fetch
    whose paper was merged into another row meanwhile is left out."""
    await conn.cursor().executemany(
        _FETCH_UPSERT,
        [(*rows.citation_fetch_values(fetch), fetch.paper_id) for fetch in fetches],
    )


async def _blocks(
    conn: Connection, identifier_keys: Sequence[int], title_keys: Sequence[int]
) -> dict[int, list[int] | None]:
    """The stored blocks of identifier keys, whole, and of title keys, None when full (keys by
    their hash; a key no paper has is absent)."""
    return {
        key: members
        for key, members in await _fetch(
            conn,
            "SELECT block_hash, array_agg(paper_id) FROM paper_index_blocks"
            " WHERE block_hash = ANY(%s) GROUP BY block_hash"
            " UNION ALL"
            " SELECT block_hash, CASE WHEN COUNT(*) < %s THEN array_agg(paper_id) END"
            " FROM paper_index_blocks WHERE block_hash = ANY(%s) GROUP BY block_hash",
            (list(identifier_keys), BLOCK_LIMIT, list(title_keys)),
        )
    }


async def _words(conn: Connection, words: Sequence[str]) -> list[tuple[str, str]]:
    """The (word, kind) rows of `words` known from stored records' author and venue fields."""
    return [
        (word, kind)
        for word, kind in await _fetch(
            conn, "SELECT word, kind FROM paper_words WHERE word = ANY(%s)", (list(words),)
        )
    ]


async def _papers(conn: Connection, columns: Sequence[str], ids: Sequence[int]):
    return await _dicts(
        conn, f"SELECT {', '.join(columns)} FROM papers WHERE id = ANY(%s)", (list(ids),)
    )


async def _matched(conn: Connection, save: PapersSave, ahead: _Matched | None = None) -> _Matched:
    """A save's start under the papers lock and its reads: those made `ahead` of it if no save
    came between (backends.paper_saving), else made now."""
    fresh = save.start(await _one(conn, NEXT_GENERATION))
    return ahead if ahead is not None and fresh else await _read(conn, save)


async def _generation(conn: Connection) -> int:
    """The store's paper index generation (0 before the first save)."""
    found = await _fetch(conn, "SELECT generation FROM paper_index_generation WHERE id = 1")
    return int(found[0][0]) if found else 0


async def _read(conn: Connection, save: PapersSave) -> _Matched:
    """A save's reads (backends.paper_saving), one statement each: the stored rows it reads
    whole, and its writes."""
    blocks = await _blocks(conn, save.identifier_keys, save.title_keys)
    titled = await _papers(conn, TITLE_COLUMNS, save.titled_ids(blocks))
    stored = await _papers(conn, ("*",), save.candidate_ids(titled))
    return stored, save.writes(stored, await _words(conn, save.title_words(stored)))


async def _link_by_url(
    conn: Connection, query_id: int, attribution: Mapping[str, int]
) -> dict[str, int]:
    """Link the query's results no paper of its own has to the paper other queries' results at
    their URL are (paper_saving.LINKS_BY_URL); the query's `attribution` with what it gained."""
    links = UrlLinks(await _fetch(conn, rows.postgres(LINKS_BY_URL), (query_id,)))
    if not links.found:
        return dict(attribution)
    had = await _fetch(
        conn,
        "SELECT DISTINCT paper_id FROM serp_items WHERE query_id = %s AND paper_id IS NOT NULL",
        (query_id,),
    )
    cursor = conn.cursor()
    await cursor.executemany("UPDATE serp_items SET paper_id = %s WHERE id = %s", links.item_links)
    stored = await _fetch(
        conn,
        "SELECT id, sources, attribution FROM papers WHERE id = ANY(%s)",
        (list(links.found_by),),
    )
    await cursor.executemany(
        "UPDATE papers SET sources = %s, attribution = %s, updated_at = now() WHERE id = %s",
        [
            (Jsonb(paper["sources"]), paper["attribution"], paper["id"])
            for paper in links.paper_updates(stored)
        ],
    )
    return links.attribution(attribution, (row[0] for row in had))


async def _written(conn: Connection, save: PapersSave, writes: Sequence[PaperWrite]) -> list[int]:
    """Run a save's writes, its block memberships and its words; each write's row id."""
    paper_ids = await _write_papers(conn, writes)
    cursor = conn.cursor()
    await cursor.executemany(
        "INSERT INTO paper_index_blocks (block_hash, paper_id) VALUES (%s, %s)"
        " ON CONFLICT DO NOTHING",
        save.written(paper_ids),
    )
    await cursor.executemany(
        "INSERT INTO paper_words (word, kind) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        save.word_entries,
    )
    return paper_ids


async def _write_papers(conn: Connection, writes: Sequence[PaperWrite]) -> list[int]:
    """Run a save's writes: rows merged into another have their items, block memberships,
    citations and landing pages moved and are deleted, stored rows updated, new ones inserted.
    Returns each write's row id."""
    for write in writes:
        if write.absorbed:
            for statement in (
                "UPDATE serp_items SET paper_id = %s WHERE paper_id = ANY(%s)",
                # A block holding both keeps the kept row once.
                "INSERT INTO paper_index_blocks (block_hash, paper_id) SELECT block_hash, %s"
                " FROM paper_index_blocks WHERE paper_id = ANY(%s) ON CONFLICT DO NOTHING",
                # A landing page asked for both keeps the kept row's answer.
                "INSERT INTO landing_pages (paper_id, url, outcome, detail, http_status,"
                " metadata_field, attempts, fetched_at) SELECT %s, url, outcome, detail,"
                " http_status, metadata_field, attempts, fetched_at FROM landing_pages"
                " WHERE paper_id = ANY(%s) ON CONFLICT DO NOTHING",
            ):
                await conn.execute(statement, (write.row_id, write.absorbed))
            await _move_citations(conn, write.row_id, write.absorbed)
            for table, column in (
                ("paper_index_blocks", "paper_id"),
                ("landing_pages", "paper_id"),
                ("papers", "id"),
            ):
                await conn.execute(
                    f"DELETE FROM {table} WHERE {column} = ANY(%s)", (write.absorbed,)
                )
    cursor = conn.cursor()
    await cursor.executemany(
        _PAPER_UPDATE, [[*_paper_values(w), w.row_id] for w in writes if w.row_id is not None]
    )
    new = [w for w in writes if w.row_id is None]
    # Ids from the identity's sequence, taken in one go: the new rows are then one insert.
    new_ids = iter(
        row[0]
        for row in await _fetch(
            conn,
            "SELECT nextval(pg_get_serial_sequence('papers', 'id')) FROM generate_series(1, %s)",
            (len(new),),
        )
    )
    paper_ids = [w.row_id if w.row_id is not None else next(new_ids) for w in writes]
    await cursor.executemany(
        _PAPER_INSERT,
        [
            [paper_id, *_paper_values(w)]
            for paper_id, w in zip(paper_ids, writes, strict=True)
            if w.row_id is None
        ],
    )
    return paper_ids


async def _move_citations(conn: Connection, kept: int | None, gone: list[int]) -> None:
    """The edges and fetched lists of rows merged into `kept` (`gone`) move to it; what it
    already has, and an edge to itself, go."""
    values = {"kept": kept, "gone": gone}
    await conn.execute(
        "INSERT INTO citations (citing_paper_id, cited_paper_id, source, fetched_at)"
        " SELECT CASE WHEN citing_paper_id = ANY(%(gone)s) THEN %(kept)s ELSE citing_paper_id"
        " END, CASE WHEN cited_paper_id = ANY(%(gone)s) THEN %(kept)s ELSE cited_paper_id END,"
        " source, fetched_at FROM citations"
        " WHERE citing_paper_id = ANY(%(gone)s) OR cited_paper_id = ANY(%(gone)s)"
        " ON CONFLICT DO NOTHING",
        values,
    )
    await conn.execute(
        "DELETE FROM citations WHERE citing_paper_id = ANY(%(gone)s)"
        " OR cited_paper_id = ANY(%(gone)s)"
        " OR (citing_paper_id = %(kept)s AND cited_paper_id = %(kept)s)",
        values,
    )
    columns = ", ".join(rows.CITATION_FETCH_COLUMNS)
    await conn.execute(
        f"INSERT INTO citation_fetches ({columns}, fetched_at)"
        f" SELECT {columns.replace('paper_id', '%(kept)s')}, fetched_at FROM citation_fetches"
        " WHERE paper_id = ANY(%(gone)s) ON CONFLICT DO NOTHING",
        values,
    )
    await conn.execute("DELETE FROM citation_fetches WHERE paper_id = ANY(%(gone)s)", values)


def _paper_values(write: PaperWrite) -> list[Any]:
    return [
        Jsonb(write.values[column]) if column in PAPER_JSON_COLUMNS else write.values[column]
        for column in PAPER_COLUMNS
    ]
