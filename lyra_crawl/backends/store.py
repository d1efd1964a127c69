"""SqlStore: the result store on either SQL backend, every method written once as a plan
(backends.dialects) of the statements of backends.statements.

The backend's database runs the plans (`SqlDatabase`): SQLite on its worker thread, each write
all-or-nothing under the file's write lock; PostgreSQL on a pooled connection, each plan one
transaction. A page is stored with its items in one transaction, so a crash loses at most the
pages in flight. Both return the same records for the same calls (tests/backends/test_store.py).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol, TypeVar

from lyra_crawl.backends import citation_saving, migrations, rows
from lyra_crawl.backends import statements as sql
from lyra_crawl.backends.dialects import Plan, Step, first, named, run, run_many, tuples, value
from lyra_crawl.backends.paper_saving import (
    PAPER_COLUMNS,
    PAPER_JSON_COLUMNS,
    PapersSave,
    PaperWrite,
    StoredTitles,
    UrlLinks,
)
from lyra_crawl.backends.rows import instant
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import BLOCK_LIMIT, CanonicalPaper, no_cyclic_gc
from lyra_crawl.processes import dead_lease_owners, process_running
from lyra_crawl.query.invariants import check_entry_state, check_query_end
from lyra_crawl.records import (
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
    SelectionRecord,
    StaleParser,
    StopReasonCount,
    StoredItem,
    StoredPage,
    StoredPaper,
    StoredQuery,
)

T = TypeVar("T")
A = TypeVar("A")
# A save's reads: the stored rows it read whole, and its writes.
_Matched = tuple[list[Any], list[PaperWrite]]


class SqlDatabase(Protocol):
    """What runs a store's plans: one executor per backend."""

    url: str

    async def run_read(self, plan: Plan[T]) -> T:
        """The plan's reads, outside any write transaction (PostgreSQL: in one)."""
        ...

    async def run_write(self, plan: Plan[T]) -> T:
        """The plan in one write transaction, all or nothing."""
        ...

    async def run_write_after(self, ahead: Plan[A], then: Callable[[A], Plan[T]]) -> T:
        """`ahead`'s reads first, outside the lock every paper save takes, then `then(what it
        read)` as a write: it must check that what `ahead` read still holds."""
        ...

    async def close(self) -> None: ...


def _json(value: Any) -> str | None:
    return None if value is None else rows.json_text(value)


class SqlStore:
    def __init__(self, database: SqlDatabase) -> None:
        self._db = database
        # Stored titles as this process last saw them; one save at a time uses them.
        self._paper_titles = StoredTitles()
        self._saving = asyncio.Lock()

    @property
    def url(self) -> str:
        return self._db.url

    async def close(self) -> None:
        await self._db.close()

    # -- queries ---------------------------------------------------------------------------

    async def start_query(self, record: QueryRecord) -> int:
        return await self._db.run_write(_start_query(record))

    async def resumable_query(self, record: QueryRecord, *, any_engine: bool) -> StoredQuery | None:
        return await self._query(
            sql.RESUMABLE_QUERY,
            normalized_query=record.normalized_query,
            any_engine=any_engine,
            engine=record.engine,
            sources=record.sources,
            serp_page=record.serp_page,
            serp_max_pages=record.serp_max_pages,
            strategy=record.strategy,
            time_range=record.time_range,
            region=record.region,
        )

    async def reopen_query(self, query_id: int) -> None:
        await self._write_step(
            run(sql.REOPEN_QUERY, host=socket.gethostname(), pid=os.getpid(), id=query_id)
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
        def finish() -> Plan[StoredQuery]:
            row = yield first(
                sql.FINISH_QUERY,
                status=status,
                stop_reason=_json(dict(stop_reasons)),
                errors=_json(dict(errors)) if errors else None,
                threshold=relevance_threshold,
                id=query_id,
            )
            finished = rows.stored_query(row)
            assert finished is not None
            check_query_end(finished, dict((yield tuples(sql.PAGES_BY_SOURCE, id=query_id))))
            if entry_state is not None and finished.batch_entry_id is not None:
                yield _entry_state(
                    finished.batch_entry_id,
                    entry_state,
                    query_id,
                    entry_detail,
                    detached=entry_detached,
                )
            return finished

        return await self._db.run_write(finish())

    async def query(self, query_id: int) -> StoredQuery | None:
        return await self._query(sql.QUERY, id=query_id)

    async def query_ids(self, *, task_id: str | None = None, last: int | None = None) -> list[int]:
        if task_id is not None:
            found = await self._tuples(sql.TASK_QUERY_IDS, task_id=task_id)
        elif last:
            found = await self._tuples(sql.LAST_QUERY_IDS, last=last)
        else:
            found = await self._tuples(sql.ALL_QUERY_IDS)
        return sorted(int(row[0]) for row in found)

    async def query_for_job(self, job_id: str) -> StoredQuery | None:
        return await self._query(sql.QUERY_FOR_JOB, job_id=job_id)

    async def task_harvest_rate(self, task_id: str) -> float | None:
        found = await self._read_step(value(sql.TASK_HARVEST_RATE, task_id=task_id))
        return None if found is None else float(found)

    async def task_engines(self, task_id: str) -> dict[str, int]:
        return dict(await self._tuples(sql.TASK_ENGINES, task_id=task_id))

    async def mark_cache_hit(self, query_id: int, answered_by: int) -> None:
        await self._write_step(run(sql.MARK_CACHE_HIT, answered_by=answered_by, id=query_id))

    async def _read_step(self, step: Step) -> Any:
        """One statement's answer, read outside any write."""
        return await self._db.run_read(_one(step))

    async def _write_step(self, step: Step) -> Any:
        """One statement's answer, written in a transaction of its own."""
        return await self._db.run_write(_one(step))

    async def _query(self, statement: sql.Statement, **params: Any) -> StoredQuery | None:
        return rows.stored_query(await self._read_step(first(statement, **params)))

    async def _tuples(self, statement: sql.Statement, **params: Any) -> list[Any]:
        return await self._read_step(tuples(statement, **params))

    async def _records(
        self, convert: Callable[[Any], T], statement: sql.Statement, **params: Any
    ) -> list[T]:
        return [convert(row) for row in await self._read_step(named(statement, **params))]

    # -- pages and items -------------------------------------------------------------------

    async def store_page(self, page: PageRecord, items: Sequence[ResultItem]) -> int:
        return await self._db.run_write(_store_page(page, items))

    async def pages(self, query_id: int) -> list[StoredPage]:
        return await self._records(rows.stored_page, sql.PAGES, id=query_id)

    async def items(self, query_id: int) -> list[StoredItem]:
        return await self._records(rows.stored_item, sql.ITEMS, id=query_id)

    async def earlier_urls(self, query_id: int) -> set[str]:
        return {row[0] for row in await self._tuples(sql.EARLIER_URLS, id=query_id)}

    async def repeated_url_count(self, query_id: int) -> int:
        return int(await self._read_step(value(sql.REPEATED_URL_COUNT, id=query_id)))

    async def stale_parsers(self) -> list[StaleParser]:
        return await self._records(rows.stale_parser, sql.STALE_PARSERS)

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
        # Reads and matching ahead of the lock every save takes (backends.paper_saving), then
        # the writes under it; one save of this process at a time (they share the titles kept).
        def ahead() -> Plan[tuple[PapersSave, _Matched]]:
            save = PapersSave(
                papers, min_abstract_chars=min_abstract_chars, titles=self._paper_titles
            )
            save.read_at((yield value(sql.GENERATION)) or 0)
            return save, (yield from _read(save))

        def then(read: tuple[PapersSave, _Matched]) -> Plan[dict[str, int]]:
            held = [read]
            del read
            yield run(sql.PAPERS_LOCK)
            # Freed within (`held` emptied), so that what the save made is gone before the
            # collector is back on.
            yield from _save_matched(query_id, held)
            counts = yield from _link_by_url(query_id, attribution)
            yield run_many(
                sql.FUSED_RANK,
                [{"rank": rank, "query_id": query_id, "url": u} for u, rank in fused_ranks.items()],
            )
            yield run(sql.QUERY_ATTRIBUTION, counts=_json(counts), query_id=query_id)
            return counts

        # The cyclic collector off from the reads to the writes: back on between them, its
        # first collection would scan all that the reads and the matching made once (~25 ms a
        # save of 1,000 papers), which the writes then free.
        async with self._saving:
            with no_cyclic_gc():
                return await self._db.run_write_after(ahead(), then)

    async def copy_paper_links(self, from_query_id: int, to_query_id: int) -> None:
        def copy() -> Plan[None]:
            yield run(sql.COPY_PAPER_LINKS, from_id=from_query_id, to_id=to_query_id)
            yield run(sql.COPY_ATTRIBUTION, from_id=from_query_id, to_id=to_query_id)

        await self._db.run_write(copy())

    async def papers_of(self, query_id: int) -> list[StoredPaper]:
        return await self._records(rows.stored_paper, sql.PAPERS_OF, id=query_id)

    async def attribution_counts(self, query_id: int) -> dict[str, int]:
        return dict(await self._tuples(sql.ATTRIBUTION_COUNTS, id=query_id))

    async def papers_found(
        self,
        *,
        task_id: str | None = None,
        batch_id: int | None = None,
        query_id: int | None = None,
        selection_id: int | None = None,
        after_id: int = 0,
        limit: int,
    ) -> list[FoundPaper]:
        scope = {
            "after_id": after_id,
            "task_id": task_id,
            "batch_id": batch_id,
            "selection_id": selection_id,
        }

        def read() -> Plan[list[FoundPaper]]:
            page = yield tuples(sql.FOUND_PAGE_IDS, query_id=query_id, limit=limit, **scope)
            if not page:
                return []
            last = {**scope, "query_id": query_id, "last_id": page[-1][0]}
            papers = yield named(sql.FOUND_PAPERS, **last)
            return rows.found_papers(papers, (yield named(sql.FOUND_BY, **last)))

        return await self._db.run_read(read())

    # -- the citation graph ----------------------------------------------------------------

    async def citation_seeds(self, query_id: int, *, limit: int) -> list[StoredPaper]:
        return await self._records(rows.stored_paper, sql.CITATION_SEEDS, id=query_id, limit=limit)

    async def store_citation_page(
        self, fetch: CitationFetch, papers: Sequence[CanonicalPaper], *, min_abstract_chars: int
    ) -> int:
        def store() -> Plan[int]:
            yield run(sql.PAPERS_LOCK)
            with no_cyclic_gc():
                save = PapersSave(
                    citation_saving.marked(papers),
                    min_abstract_chars=min_abstract_chars,
                    titles=self._paper_titles,
                )
                stored, writes = yield from _matched(save)
                citation_saving.keep_attributions(writes, stored)
                paper_ids = yield from _written(save, writes)
            fetched = replace(
                fetch, paper_id=citation_saving.row_now(fetch.paper_id, writes, paper_ids)
            )
            if (yield first(sql.PAPER_EXISTS, id=fetched.paper_id)) is None:
                return 0  # merged into another row by another save since it was asked for
            ends = citation_saving.rows_of_papers(writes, paper_ids)
            added = yield run_many(
                sql.ADD_EDGE,
                [
                    {"citing_paper_id": citing, "cited_paper_id": cited, "source": fetch.source}
                    for citing, cited in citation_saving.edges(fetched, ends)
                ],
            )
            yield run_many(sql.UPSERT_FETCH, [_fetch_values(fetched)])
            return added

        async with self._saving:
            return await self._db.run_write(store())

    async def end_citation_fetches(self, fetches: Sequence[CitationFetch]) -> None:
        await self._write_step(run_many(sql.UPSERT_FETCH, [_fetch_values(f) for f in fetches]))

    async def citation_fetches(self, query_id: int) -> list[CitationFetch]:
        return await self._records(rows.citation_fetch, sql.CITATION_FETCHES, id=query_id)

    async def citation_frontier(
        self, query_id: int, level: int, *, limit: int
    ) -> list[StoredPaper]:
        return await self._records(
            rows.stored_paper, sql.CITATION_FRONTIER, id=query_id, level=level, limit=limit
        )

    async def task_citation_graph(self, task_id: str) -> CitationGraph:
        def read() -> Plan[CitationGraph]:
            edges = yield named(sql.TASK_CITATION_EDGES, task_id=task_id)
            papers = yield named(sql.TASK_CITATION_PAPERS, task_id=task_id)
            return rows.citation_graph(papers, edges)

        return await self._db.run_read(read())

    # -- landing pages (the papers spider) -------------------------------------------------

    async def papers_to_read(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[PaperToRead]:
        return await self._records(
            rows.paper_to_read, sql.PAPERS_TO_READ, task_id=task_id, query_id=query_id
        )

    async def record_landing_page(self, page: LandingPage, abstract: str | None) -> None:
        def record() -> Plan[None]:
            if abstract is not None:
                # A save in progress read the paper and writes it whole: after it, not between;
                # one that read it ahead of the lock must read it again. Taken first, as a save
                # takes it before the landing pages it moves: else each would wait for the other.
                yield run(sql.PAPERS_LOCK)
            yield run(
                sql.RECORD_LANDING_PAGE,
                **{column: getattr(page, column) for column in sql.LANDING_COLUMNS},
            )
            if abstract is not None:
                yield run(sql.PAPER_FROM_LANDING, paper_abstract=abstract, paper_id=page.paper_id)
                yield value(sql.NEXT_GENERATION)

        await self._db.run_write(record())

    async def landing_pages(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[LandingPage]:
        return await self._records(
            rows.landing_page, sql.LANDING_PAGES, task_id=task_id, query_id=query_id
        )

    # -- search-level cache ----------------------------------------------------------------

    async def fresh_cache_entry(self, key: str, now: datetime) -> int | None:
        found = await self._read_step(value(sql.FRESH_CACHE_ENTRY, key=key, now=instant(now)))
        return None if found is None else int(found)

    async def store_cache_entry(
        self, key: str, query_id: int, *, created_at: datetime, expires_at: datetime
    ) -> None:
        await self._write_step(
            run(
                sql.STORE_CACHE_ENTRY,
                cache_key=key,
                query_id=query_id,
                created_at=instant(created_at),
                expires_at=instant(expires_at),
            )
        )

    # -- interventions ---------------------------------------------------------------------

    async def add_intervention(
        self, *, engine: str, url: str, query_id: int | None, kind: str, detail: str
    ) -> int:
        added = value(
            sql.ADD_INTERVENTION,
            engine=engine,
            url=url,
            query_id=query_id,
            kind=kind,
            detail=detail,
        )
        return int(await self._write_step(added))

    async def open_interventions(self) -> list[Intervention]:
        return await self._records(rows.intervention, sql.OPEN_INTERVENTIONS)

    async def resolve_intervention(self, intervention_id: int) -> bool:
        return await self._write_step(run(sql.RESOLVE_INTERVENTION, id=intervention_id)) == 1

    # -- batches ---------------------------------------------------------------------------

    async def create_batch(
        self, *, source: str, content_hash: str, entries: Sequence[EntrySpec]
    ) -> BatchRecord:
        def create() -> Plan[BatchRecord]:
            ((batch_id, created_at),) = yield tuples(
                sql.CREATE_BATCH, source=source, content_hash=content_hash
            )
            yield run_many(
                sql.ADD_ENTRY,
                [
                    {
                        "batch_id": batch_id,
                        "position": entry.position,
                        "query_text": entry.query_text,
                        "arguments": _json(dict(entry.arguments)),
                        "state": "rejected" if entry.rejected else "pending",
                        "detail": entry.rejected,
                        "engine": entry.engine,
                    }
                    for entry in entries
                ],
            )
            return BatchRecord(batch_id, source, content_hash, created_at, len(entries))

        return await self._db.run_write(create())

    async def batch(self, batch_id: int) -> BatchRecord | None:
        found = await self._tuples(sql.BATCH, id=batch_id)
        return BatchRecord(*found[0]) if found else None

    async def batch_by_hash(self, content_hash: str) -> BatchRecord | None:
        found = await self._tuples(sql.BATCH_BY_HASH, content_hash=content_hash)
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
        skip = sorted(skip_engines)

        def take() -> Plan[list[BatchEntry]]:
            yield from _end_dead_leases(batch_id)
            # Pending entries, then running ones whose lease ran out: two reads of the
            # (batch, state, position) index, each stopping at the limit. One read of both
            # states sorted them all on every take, a batch's every entry.
            found = yield tuples(sql.PENDING_TO_TAKE, batch_id=batch_id, skip=skip, limit=limit)
            ids = [row[0] for row in found]
            if len(ids) < limit:
                found = yield tuples(
                    sql.ABANDONED_TO_TAKE, batch_id=batch_id, skip=skip, limit=limit - len(ids)
                )
                if again := [row[0] for row in found]:
                    yield run(sql.INTERRUPT_ABANDONED, ids=again)
                ids += again
            if not ids:
                return []
            taken = yield named(sql.TAKE_ENTRIES, owner=owner, lease_s=lease_s, ids=ids)
            by_id = {row["id"]: rows.batch_entry(row) for row in taken}
            return [by_id[entry_id] for entry_id in ids]

        return await self._db.run_write(take())

    async def pending_engines(self, batch_id: int) -> dict[str, int]:
        return dict(await self._tuples(sql.PENDING_ENGINES, batch_id=batch_id))

    async def finish_entry(
        self, entry_id: int, *, state: str, query_id: int | None, detail: str = ""
    ) -> None:
        await self._write_step(_entry_state(entry_id, state, query_id, detail))

    async def renew_entry_leases(
        self, entry_ids: Sequence[int], *, owner: str, lease_s: float
    ) -> None:
        renew = run(sql.RENEW_LEASES, lease_s=lease_s, ids=list(entry_ids), owner=owner)
        await self._write_step(renew)

    async def batch_entries(self, batch_id: int) -> list[BatchEntry]:
        return await self._records(rows.batch_entry, sql.BATCH_ENTRIES, batch_id=batch_id)

    # -- batch figures: progress display and batch report ----------------------------------

    async def batch_progress(self, batch_id: int) -> BatchProgress:
        def read() -> Plan[BatchProgress]:
            of_batch = {"batch_id": batch_id}
            return rows.batch_progress(
                batch_id,
                entry_states=(yield tuples(sql.ENTRY_STATES, **of_batch)),
                cached_entries=(yield value(sql.CACHED_ENTRIES, **of_batch)),
                pages=(yield tuples(sql.BATCH_PAGE_COUNTS, **of_batch)),
                blocks=[BlockCount(*row) for row in (yield tuples(sql.BATCH_BLOCKS, **of_batch))],
                queries=(yield value(sql.BATCH_QUERY_COUNT, **of_batch)),
                rate_waits=(yield tuples(sql.BATCH_RATE_WAITS, **of_batch)),
            )

        return await self._db.run_read(read())

    async def record_rate_waits(self, batch_id: int, owner: str, waits: Mapping[str, int]) -> None:
        recorded = run_many(
            sql.RECORD_RATE_WAITS,
            [
                {"batch_id": batch_id, "owner": owner, "engine": e, "waits": n}
                for e, n in waits.items()
            ],
        )
        await self._write_step(recorded)

    async def batch_stop_reasons(self, batch_id: int) -> list[StopReasonCount]:
        return [
            StopReasonCount(*row) for row in await self._tuples(sql.STOP_REASONS, batch_id=batch_id)
        ]

    async def batch_blocks(self, batch_id: int) -> list[BlockCount]:
        return [BlockCount(*row) for row in await self._tuples(sql.BATCH_BLOCKS, batch_id=batch_id)]

    async def batch_requests_over_time(self, batch_id: int, bucket_s: int) -> list[RequestBucket]:
        found = await self._tuples(sql.REQUESTS_OVER_TIME, batch_id=batch_id, bucket_s=bucket_s)
        return [RequestBucket(*row) for row in found]

    async def batch_depth_rates(self, batch_id: int) -> list[DepthRates]:
        return rows.depth_rates(await self._tuples(sql.DEPTH_RATES, batch_id=batch_id))

    async def batch_query_ids(self, batch_id: int) -> list[int]:
        return [int(row[0]) for row in await self._tuples(sql.BATCH_QUERY_IDS, batch_id=batch_id)]

    async def batch_entries_in(
        self, batch_id: int, states: Sequence[str], *, limit: int
    ) -> tuple[list[BatchEntry], int]:
        def read() -> Plan[tuple[list[BatchEntry], int]]:
            where = {"batch_id": batch_id, "states": list(states)}
            found = yield named(sql.ENTRIES_IN, limit=limit, **where)
            total = yield value(sql.COUNT_ENTRIES_IN, **where)
            return [rows.batch_entry(row) for row in found], int(total)

        return await self._db.run_read(read())

    # -- selections (scrapy select's audit) ------------------------------------------------

    async def record_selection(self, record: SelectionRecord) -> int:
        def write() -> Plan[int]:
            selection_id = int((yield value(sql.RECORD_SELECTION, **rows.selection_values(record))))
            yield run_many(sql.ADD_CANDIDATES, rows.candidate_values(selection_id, record))
            return selection_id

        return await self._db.run_write(write())

    async def selection(self, selection_id: int) -> SelectionRecord | None:
        def read() -> Plan[SelectionRecord | None]:
            row = yield first(sql.SELECTION, id=selection_id)
            if row is None:
                return None
            candidates = yield named(sql.SELECTION_CANDIDATES, id=selection_id)
            return rows.selection_record(row, candidates)

        return await self._db.run_read(read())

    async def documents_version(self, query_ids: Sequence[int]) -> str:
        ((generation, last_item, last_start),) = await self._tuples(
            sql.DOCUMENTS_VERSION, ids=list(query_ids)
        )
        return f"{generation or 0}:{last_item or 0}:{last_start or ''}"


# -- plans shared by several methods -----------------------------------------------------------


def _one(step: Any) -> Plan[Any]:
    """A plan of one step, its answer."""
    return (yield step)


def _start_query(record: QueryRecord) -> Plan[int]:
    values = {column: getattr(record, column, None) for column in sql.QUERY_COLUMNS}
    values.update(selection=_json(record.selection), host=socket.gethostname(), pid=os.getpid())
    query_id = yield value(sql.START_QUERY, **values)
    if record.batch_entry_id is not None:
        yield run(
            sql.ENTRY_RUNS_QUERY,
            query_id=query_id,
            engine=record.engine or None,
            entry_id=record.batch_entry_id,
        )
    return int(query_id)


def _store_page(page: PageRecord, items: Sequence[ResultItem]) -> Plan[int]:
    stored = yield run_many(sql.INSERT_ITEM, [rows.item_values(item) for item in items])
    yield run(
        sql.STORE_PAGE,
        query_id=page.query_id,
        source=page.source,
        page_number=page.page_number,
        outcome=page.outcome,
        results=page.results,
        items_stored=stored,
        novelty_rate=page.novelty_rate,
        harvest_rate=page.harvest_rate,
        url=page.url,
    )
    return stored


def _entry_state(
    entry_id: int, state: str, query_id: int | None, detail: str, *, detached: bool = False
) -> Any:
    """An entry's new state; `detached`: without its query and the engine chosen for it."""
    check_entry_state(state, detail)
    return run(
        sql.SET_ENTRY_STATE,
        new_state=state,
        detached=detached,
        query=query_id,
        new_detail=detail,
        finished=state not in ("pending", "running"),
        entry_id=entry_id,
    )


def _end_dead_leases(batch_id: int) -> Plan[None]:
    """End at once the leases of running entries whose crawl, on this host, is gone (killed):
    a resumed batch takes them again without waiting for the lease to run out."""
    owners = yield tuples(
        sql.LEASE_OWNERS, batch_id=batch_id, host_owners=f"{socket.gethostname()}:%"
    )
    if dead := dead_lease_owners(owner for (owner,) in owners):
        yield run(sql.END_LEASES, batch_id=batch_id, owners=dead)


def _fetch_values(fetch: CitationFetch) -> dict[str, Any]:
    return {f"fetch_{column}": getattr(fetch, column) for column in rows.CITATION_FETCH_COLUMNS}


# -- saving papers (backends.paper_saving plans what; these run it) -----------------------------


def _read(save: PapersSave) -> Plan[_Matched]:
    """A save's reads, one statement each: the stored rows it reads whole, and its writes."""
    found = yield tuples(
        sql.BLOCKS, identifiers=save.identifier_keys, titles=save.title_keys, limit=BLOCK_LIMIT
    )
    blocks = {key: rows.decode_json(members, None) for key, members in found}
    titled = yield named(sql.PAPER_TITLES, ids=save.titled_ids(blocks))
    stored = yield named(sql.PAPERS, ids=save.candidate_ids(titled))
    words = yield tuples(sql.KNOWN_WORDS, words=save.title_words(stored))
    return stored, save.writes(stored, words)


def _matched(save: PapersSave, ahead: _Matched | None = None) -> Plan[_Matched]:
    """A save's start in its transaction and its reads: those made `ahead` of it if no save came
    between (backends.paper_saving), else made now."""
    fresh = save.start((yield value(sql.NEXT_GENERATION)))
    return ahead if ahead is not None and fresh else (yield from _read(save))


def _save_matched(query_id: int, read: list[tuple[PapersSave, _Matched]]) -> Plan[None]:
    """Match and write a query's papers (`read`: as read ahead, taken from the list so that it
    is freed here), and link its items to their rows."""
    save, ahead = read.pop()
    _, writes = yield from _matched(save, ahead)
    paper_ids = yield from _written(save, writes)
    yield run_many(
        sql.LINK_ITEMS,
        [
            {"paper_id": paper_id, "query_id": query_id, "url": url}
            for paper_id, write in zip(paper_ids, writes, strict=True)
            for url in write.urls
        ],
    )


def _written(save: PapersSave, writes: Sequence[PaperWrite]) -> Plan[list[int]]:
    """Run a save's writes, its block memberships and its words; each write's row id."""
    paper_ids = yield from _write_papers(writes)
    yield run_many(
        sql.ENTER_BLOCK,
        [{"block_hash": key, "paper_id": paper_id} for key, paper_id in save.written(paper_ids)],
    )
    yield run_many(sql.KNOW_WORD, [{"word": w, "kind": kind} for w, kind in save.word_entries])
    return paper_ids


def _write_papers(writes: Sequence[PaperWrite]) -> Plan[list[int]]:
    """Rows merged into another are handed over and deleted, stored rows updated, new ones
    inserted with the ids the store gives them in one go. Each write's row id."""
    for write in writes:
        if write.absorbed:
            for statement in sql.ABSORB_PAPERS:
                yield run(statement, kept=write.row_id, gone=write.absorbed)
    yield run_many(
        sql.UPDATE_PAPER,
        [{**_paper_values(w), "paper_id": w.row_id} for w in writes if w.row_id is not None],
    )
    new = sum(write.row_id is None for write in writes)
    new_ids = iter([row[0] for row in (yield tuples(sql.NEW_PAPER_IDS, count=new))] if new else [])
    paper_ids = [w.row_id if w.row_id is not None else next(new_ids) for w in writes]
    yield run_many(
        sql.INSERT_PAPER,
        [
            {**_paper_values(w), "id": paper_id}
            for paper_id, w in zip(paper_ids, writes, strict=True)
            if w.row_id is None
        ],
    )
    return paper_ids


def _paper_values(write: PaperWrite) -> dict[str, Any]:
    values = write.values
    return {
        column: rows.json_text(values[column]) if column in PAPER_JSON_COLUMNS else values[column]
        for column in PAPER_COLUMNS
    }


def _link_by_url(query_id: int, attribution: Mapping[str, int]) -> Plan[dict[str, int]]:
    """Link the query's results no paper of its own has to the paper other queries' results at
    their URL are (statements.LINKS_BY_URL); the query's `attribution` with what it gained."""
    links = UrlLinks((yield tuples(sql.LINKS_BY_URL, query_id=query_id)))
    if not links.found:
        return dict(attribution)
    had = yield tuples(sql.LINKED_PAPERS, query_id=query_id)
    yield run_many(
        sql.LINK_ITEM, [{"paper_id": paper, "item_id": item} for paper, item in links.item_links]
    )
    stored = yield tuples(sql.PAPER_SOURCES, ids=list(links.found_by))
    updates = links.paper_updates(
        (paper_id, rows.decode_json(sources, []), attribution)
        for paper_id, sources, attribution in stored
    )
    yield run_many(
        sql.UPDATE_PAPER_SOURCES,
        [
            {
                "paper_sources": _json(paper["sources"]),
                "paper_attribution": paper["attribution"],
                "paper_id": paper["id"],
            }
            for paper in updates
        ],
    )
    return links.attribution(attribution, (row[0] for row in had))


def opening(dialect: str, where: str) -> Plan[None]:
    """What opening a store does, in one transaction: its schema brought to the newest
    version (backends.migrations), then this host's `running` queries whose process is gone
    (killed, crashed) marked interrupted; other hosts' crawls are theirs to judge."""
    yield from migrations.upgrade(dialect, where)
    running = yield tuples(sql.RUNNING_HERE, host=socket.gethostname())
    if dead := [
        query_id for query_id, pid, started in running if not process_running(pid, known_at=started)
    ]:
        yield run(sql.INTERRUPT_QUERIES, ids=dead)
