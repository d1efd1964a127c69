"""What every SQL backend shares: rows to the typed records, the item columns, instants as text,
dead crawls on this host, a batch's figures from grouped rows. No SQL (each backend keeps its
own dialect; saving papers, planned without SQL too, is backends.paper_saving) but the reads
both run alike: STALE_PARSERS and the citation graph's (`?` placeholders, which `postgres` turns
into psycopg's `%s`).

A row is anything indexable by column name (sqlite3.Row, a psycopg dict row). JSON columns come
as text (SQLite) or already decoded (PostgreSQL jsonb); both are read here. The item columns
are derived from StoredItem's fields: a field added to a result reaches the tables through each
backend's schema alone.
"""

from __future__ import annotations

import functools
import json
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any, Protocol

from lyra_crawl.backends.records import (
    BatchEntry,
    BatchProgress,
    BlockCount,
    CitationEdge,
    CitationFetch,
    CitationGraph,
    DepthRates,
    FoundPaper,
    Intervention,
    LandingPage,
    Moments,
    PaperToRead,
    StaleParser,
    StoredItem,
    StoredPage,
    StoredPaper,
    StoredQuery,
)
from lyra_crawl.items import ResultItem
from lyra_crawl.politeness.breaker import BreakerState, Health
from lyra_crawl.processes import process_running


class Row(Protocol):
    def __getitem__(self, column: str, /) -> Any: ...


ITEM_COLUMNS = tuple(field.name for field in fields(StoredItem))
# Written by the store (fetched_at) or by the query's close (paper_id, fused_rank).
ITEM_WRITTEN_BY_STORE = frozenset({"fetched_at", "paper_id", "fused_rank"})
# What an item's insert names; `engine` is always the item's source. The store adds fetched_at.
ITEM_INSERT_COLUMNS = (
    *(column for column in ITEM_COLUMNS if column not in ITEM_WRITTEN_BY_STORE),
    "engine",
)
# Columns holding JSON lists.
JSON_LIST_COLUMNS = frozenset({"authors"})
_JSON = json.JSONDecoder()


def instant(moment: datetime) -> str:
    """The textual form of every timestamp a record carries: UTC, ISO 8601, milliseconds."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def utc_now() -> str:
    return instant(datetime.now(UTC))


def item_row(
    item: ResultItem, *, encode_list: Callable[[list[Any]], Any] = json.dumps
) -> tuple[Any, ...]:
    """One item as the values of ITEM_INSERT_COLUMNS; `encode_list` turns a JSON list column
    into what the backend's driver writes."""
    values: list[Any] = []
    for column in ITEM_INSERT_COLUMNS[:-1]:
        value = getattr(item, column)
        values.append(encode_list(list(value)) if column in JSON_LIST_COLUMNS else value)
    values.append(item.source)
    return tuple(values)


def decode_json(value: Any, default: Any) -> Any:
    """A JSON column's value: text is decoded (empty text is `default`), a decoded one kept."""
    if value is None:
        return default
    if not isinstance(value, str):
        return value
    if not value:
        return default
    # The columns hold json.dumps' text, which raw_decode reads whole at a third of json.loads'
    # cost (its two whitespace scans); anything else is json.loads' to read or refuse.
    try:
        decoded, end = _JSON.raw_decode(value)
    except ValueError:
        end = -1
    return decoded if end == len(value) else json.loads(value)


def stored_item(row: Row) -> StoredItem:
    values: dict[str, Any] = {column: row[column] for column in ITEM_COLUMNS}
    values["authors"] = tuple(decode_json(row["authors"], []))
    values["snippet"] = values["snippet"] or ""
    values["kind"] = values["kind"] or "serp"
    values["position"] = values["position"] or 0
    return StoredItem(**values)


QUERY_JSON_COLUMNS: Mapping[str, Any] = {
    "stop_reason": {},
    "errors": {},
    "attribution": None,
    "selection": None,
}


def stored_query(row: Row | None) -> StoredQuery | None:
    if row is None:
        return None
    values = {name: row[name] for name in _field_names(StoredQuery)}
    for column, default in QUERY_JSON_COLUMNS.items():
        values[column] = decode_json(row[column], default)
    values["cache_hit"] = bool(row["cache_hit"])
    return StoredQuery(**values)


def stored_page(row: Row) -> StoredPage:
    return StoredPage(**{name: row[name] for name in _field_names(StoredPage)})


# The pages stored for each source of a query (query id), for invariants.check_query_end.
PAGES_BY_SOURCE = "SELECT source, COUNT(*) FROM serp_pages WHERE query_id = ? GROUP BY source"


# The layout_changed pages stored after each engine's last ok or empty page (by time, then id:
# two pages can share a millisecond), as StaleParser rows. Plain SQL both dialects read alike.
STALE_PARSERS = (
    "WITH last_read AS ("
    "  SELECT source, fetched_at, id,"
    "  ROW_NUMBER() OVER (PARTITION BY source ORDER BY fetched_at DESC, id DESC) AS newest"
    "  FROM serp_pages WHERE outcome IN ('ok', 'empty')"
    "), stale AS ("
    "  SELECT p.source, p.query_id, p.page_number, p.fetched_at,"
    "  MIN(p.fetched_at) OVER (PARTITION BY p.source) AS since,"
    "  COUNT(*) OVER (PARTITION BY p.source) AS pages,"
    "  ROW_NUMBER() OVER (PARTITION BY p.source ORDER BY p.fetched_at DESC, p.id DESC)"
    "  AS newest"
    "  FROM serp_pages p"
    "  LEFT JOIN last_read r ON r.source = p.source AND r.newest = 1"
    "  WHERE p.outcome = 'layout_changed'"
    "  AND (r.id IS NULL OR (p.fetched_at, p.id) > (r.fetched_at, r.id))"
    ")"
    " SELECT source AS engine, since, pages, query_id, page_number, fetched_at FROM stale"
    " WHERE newest = 1 ORDER BY source"
)


def stale_parser(row: Row) -> StaleParser:
    return StaleParser(**{name: row[name] for name in _field_names(StaleParser)})


def stored_paper(row: Row) -> StoredPaper:
    values = {name: row[name] for name in _field_names(StoredPaper)}
    values["authors"] = tuple(decode_json(values["authors"], []))
    values["external_ids"] = decode_json(values["external_ids"], {})
    values["sources"] = tuple(decode_json(values["sources"], []))
    values["fetch_urls"] = decode_json(values["fetch_urls"], {})
    return StoredPaper(**values)


# The results of a task's, a batch's or one query's queries linked to a paper past a paper id
# (paper id, task id, batch id, query id): FOUND_PAGE_IDS reads the ids of a page of papers
# along serp_items' paper index, FOUND_PAPERS and FOUND_BY the page up to its last id (…, last).
# CROSS JOIN keeps SQLite walking the paper index from the page's start (each page reads its own
# results only); else it reads every result of the task's queries for every page, then sorts.
_FOUND = (
    "FROM serp_items AS item CROSS JOIN queries AS query"
    " WHERE query.id = item.query_id AND item.paper_id > ? AND (query.task_id = ? OR"
    " query.batch_entry_id IN (SELECT id FROM batch_entries WHERE batch_id = ?) OR query.id = ?)"
)
FOUND_PAGE_IDS = (
    f"SELECT item.paper_id {_FOUND} GROUP BY item.paper_id ORDER BY item.paper_id LIMIT ?"
)
# StoredPaper's columns only: the rows' match_records (the merge's copy of every record) would
# be read and dropped.
FOUND_PAPERS = (
    f"SELECT {', '.join(field.name for field in fields(StoredPaper))} FROM papers"
    f" WHERE id IN (SELECT item.paper_id {_FOUND} AND item.paper_id <= ?) ORDER BY id"
)
FOUND_BY = (
    "SELECT item.paper_id, query.query_text, COALESCE(item.fused_rank, item.rank) AS rank"
    f" {_FOUND} AND item.paper_id <= ? ORDER BY item.paper_id, query.id"
)


def found_papers(papers: Iterable[Row], found_by: Iterable[Row]) -> list[FoundPaper]:
    """Each paper with the queries that found it (FOUND_PAPERS' and FOUND_BY's rows)."""
    queries: dict[int, dict[str, None]] = {}
    ranks: dict[int, int] = {}
    for row in found_by:
        paper_id, rank = row["paper_id"], row["rank"]
        queries.setdefault(paper_id, {})[row["query_text"]] = None
        ranks[paper_id] = min(rank, ranks.get(paper_id, rank))
    return [
        FoundPaper(
            paper := stored_paper(row), tuple(queries.get(paper.id, ())), ranks.get(paper.id)
        )
        for row in papers
    ]


def citation_fetch(row: Row) -> CitationFetch:
    return CitationFetch(**{name: row[name] for name in _field_names(CitationFetch)})


def postgres(sql: str) -> str:
    """A shared read with psycopg's placeholders."""
    return sql.replace("?", "%s")


# A paper read from its abstract: where a citation graph starts and goes on from.
_READ_FROM_ABSTRACT = "paper.evidence = 'abstract'"
# The query's papers by their best fused rank (query id, limit).
CITATION_SEEDS = (
    "SELECT paper.* FROM papers AS paper JOIN ("
    "  SELECT paper_id, MIN(fused_rank) AS best FROM serp_items"
    "  WHERE query_id = ? AND paper_id IS NOT NULL GROUP BY paper_id"
    ") AS ranked ON ranked.paper_id = paper.id"
    f" WHERE {_READ_FROM_ABSTRACT}"
    " ORDER BY ranked.best IS NULL, ranked.best, paper.id LIMIT ?"
)
# The papers a query's fetches of one level reached, most edges first: a paper's references
# start at it, its citations end there (query id, level, query id, level, query id, limit).
# A query's citation list fetches, in the order they were planned.
CITATION_FETCHES = (
    "SELECT * FROM citation_fetches WHERE query_id = ? ORDER BY level, paper_id, source, relation"
)
CITATION_FRONTIER = (
    "SELECT paper.* FROM papers AS paper JOIN ("
    "  SELECT reached, COUNT(*) AS edges FROM ("
    "    SELECT edge.cited_paper_id AS reached FROM citation_fetches AS list"
    "    JOIN citations AS edge"
    "    ON edge.citing_paper_id = list.paper_id AND edge.source = list.source"
    "    WHERE list.query_id = ? AND list.level = ? AND list.relation = 'references'"
    "    UNION ALL"
    "    SELECT edge.citing_paper_id FROM citation_fetches AS list"
    "    JOIN citations AS edge"
    "    ON edge.cited_paper_id = list.paper_id AND edge.source = list.source"
    "    WHERE list.query_id = ? AND list.level = ? AND list.relation = 'citations'"
    "  ) AS ends GROUP BY reached"
    ") AS frontier ON frontier.reached = paper.id"
    f" WHERE {_READ_FROM_ABSTRACT} AND paper.id NOT IN"
    "  (SELECT paper_id FROM citation_fetches WHERE query_id = ?)"
    " ORDER BY frontier.edges DESC, paper.id LIMIT ?"
)
# A task's queries and those whose cached results they re-used, and the edges their fetches
# read (task id, task id).
_TASK_EDGES = (
    "WITH task AS (SELECT id FROM queries WHERE task_id = ?"
    " UNION SELECT cached_from FROM queries WHERE task_id = ? AND cached_from IS NOT NULL),"
    " fetched AS (SELECT DISTINCT paper_id, source, relation FROM citation_fetches"
    " WHERE query_id IN (SELECT id FROM task)),"
    " edges AS (SELECT edge.* FROM citations AS edge JOIN fetched"
    " ON fetched.relation = 'references' AND edge.citing_paper_id = fetched.paper_id"
    " AND edge.source = fetched.source"
    " UNION SELECT edge.* FROM citations AS edge JOIN fetched"
    " ON fetched.relation = 'citations' AND edge.cited_paper_id = fetched.paper_id"
    " AND edge.source = fetched.source)"
)
TASK_CITATION_EDGES = (
    f"{_TASK_EDGES} SELECT * FROM edges ORDER BY citing_paper_id, cited_paper_id, source"
)
# The task's papers: those its queries found and those at the ends of its edges.
TASK_CITATION_PAPERS = (
    f"{_TASK_EDGES} SELECT * FROM papers WHERE id IN (SELECT paper_id FROM serp_items"
    " WHERE query_id IN (SELECT id FROM task)) OR id IN (SELECT citing_paper_id FROM edges)"
    " OR id IN (SELECT cited_paper_id FROM edges) ORDER BY id"
)


def citation_graph(papers: Iterable[Row], edges: Iterable[Row]) -> CitationGraph:
    return CitationGraph([stored_paper(row) for row in papers], [citation_edge(r) for r in edges])


# The columns of a `citation_fetches` row a store writes (fetched_at is the store's).
CITATION_FETCH_COLUMNS = (
    "query_id",
    "paper_id",
    "source",
    "relation",
    "level",
    "status",
    "links",
    "detail",
)


def citation_fetch_values(fetch: CitationFetch) -> tuple[Any, ...]:
    return tuple(getattr(fetch, column) for column in CITATION_FETCH_COLUMNS)


def citation_edge(row: Row) -> CitationEdge:
    return CitationEdge(
        row["citing_paper_id"], row["cited_paper_id"], row["source"], row["fetched_at"]
    )


def paper_to_read(row: Row) -> PaperToRead:
    values = {name: row[name] for name in _field_names(PaperToRead)}
    values["fetch_urls"] = decode_json(row["fetch_urls"], {})
    return PaperToRead(**values)


def landing_page(row: Row) -> LandingPage:
    return LandingPage(**{name: row[name] for name in _field_names(LandingPage)})


def intervention(row: Row) -> Intervention:
    values = {name: row[name] for name in _field_names(Intervention)}
    values["detail"] = values["detail"] or ""
    return Intervention(**values)


def batch_entry(row: Row) -> BatchEntry:
    values = {name: row[name] for name in _field_names(BatchEntry)}
    values["arguments"] = decode_json(row["arguments"], {})
    return BatchEntry(**values)


def health(engine: str, row: Row | None) -> Health:
    if row is None:
        return Health(engine=engine)
    values = {name: row[name] for name in _field_names(Health)}
    values["state"] = BreakerState(values["state"])
    return Health(**values)


@functools.cache
def _field_names(record: type) -> tuple[str, ...]:
    return tuple(field.name for field in fields(record))


# -- crawls on this host ---------------------------------------------------------------------


def process_alive(pid: int) -> bool:
    """Whether `pid` runs on this host. A zombie (ended, its parent not yet told) does not:
    its pid stays taken until the parent reaps it, which a busy parent may not do soon."""
    return process_running(pid)


def dead_lease_owners(owners: Iterable[str]) -> list[str]:
    """The lease owners (host:pid) that are processes of this host no longer running.

    An owner of another host, or that is not host:pid (another client of the store), is left to
    its lease.
    """
    host = f"{socket.gethostname()}:"
    return [
        owner
        for owner in owners
        if owner.startswith(host)
        and owner[len(host) :].isdigit()
        and not process_alive(int(owner[len(host) :]))
    ]


# -- batch figures ---------------------------------------------------------------------------


def batch_progress(
    batch_id: int,
    *,
    entry_states: Iterable[Sequence[Any]],
    cached_entries: int,
    pages: Iterable[Sequence[Any]],
    blocks: Iterable[BlockCount],
    queries: int,
    rate_waits: Iterable[Sequence[Any]],
) -> BatchProgress:
    """A batch's figures from its grouped rows.

    `entry_states`: (state, entries, first started_at, last finished_at) per entry state;
    `pages`: (entry state, source, cache hit, pages, items stored) per group of pages;
    `rate_waits`: (engine, waits) summed over the batch's crawls.
    """
    entries: dict[str, int] = {}
    started: list[str] = []
    finished: list[str] = []
    for state, n, first, last in entry_states:
        entries[state] = n
        started += [first] if first else []
        finished += [last] if last else []
    requests: dict[str, int] = {}
    finished_pages: dict[str, int] = {}
    running_pages: dict[str, int] = {}
    replayed = items = 0
    for state, source, cache_hit, count, stored in pages:
        items += stored
        if cache_hit:
            replayed += count
            continue
        requests[source] = requests.get(source, 0) + count
        if state in ("done", "failed"):
            finished_pages[source] = finished_pages.get(source, 0) + count
        elif state == "running":
            running_pages[source] = running_pages.get(source, 0) + count
    blocked: dict[str, int] = {}
    for block in blocks:
        blocked[block.engine] = blocked.get(block.engine, 0) + block.pages
    return BatchProgress(
        batch_id=batch_id,
        entries=entries,
        cached_entries=cached_entries,
        queries=queries,
        requests=dict(sorted(requests.items())),
        replayed_pages=replayed,
        items=items,
        blocks=blocked,
        finished_pages=finished_pages,
        running_pages=running_pages,
        rate_waits={engine: int(waits) for engine, waits in rate_waits},
        started_at=min(started, default=None),
        finished_at=max(finished, default=None),
    )


def depth_rates(found: Iterable[Sequence[Any]]) -> list[DepthRates]:
    """DepthRates from rows of (source, page number, pages, then count, sum and sum of squares
    of novelty, then of harvest)."""
    return [
        DepthRates(
            source,
            page_number,
            pages,
            Moments(n_novelty, novelty or 0.0, novelty_sq or 0.0),
            Moments(n_harvest, harvest or 0.0, harvest_sq or 0.0),
        )
        for (
            source,
            page_number,
            pages,
            n_novelty,
            novelty,
            novelty_sq,
            n_harvest,
            harvest,
            harvest_sq,
        ) in found
    ]


# -- landing pages: the SQL both stores run ("?" placeholders; `postgres` for psycopg's) -------

# The papers a task's queries (task id) or one query (query id) found.
_PAPERS_OF_TARGET = (
    "SELECT item.paper_id FROM serp_items AS item JOIN queries AS query"
    " ON query.id = item.query_id WHERE query.task_id = ? OR query.id = ?"
)
# Those queued for a fetch, each with its latest landing page (task id, query id).
PAPERS_TO_READ = (
    "SELECT paper.id AS paper_id, paper.title, paper.fetch_url, paper.fetch_urls,"
    " last.url AS last_url, last.outcome AS last_outcome FROM papers AS paper"
    " LEFT JOIN (SELECT paper_id, url, outcome, ROW_NUMBER() OVER"
    " (PARTITION BY paper_id ORDER BY fetched_at DESC, url) AS latest FROM landing_pages)"
    " AS last ON last.paper_id = paper.id AND last.latest = 1"
    f" WHERE paper.evidence = 'fetch' AND paper.id IN ({_PAPERS_OF_TARGET})"
    " ORDER BY paper.id"
)
# The landing pages of a task's or a query's papers (task id, query id).
LANDING_PAGES = (
    f"SELECT * FROM landing_pages WHERE paper_id IN ({_PAPERS_OF_TARGET}) ORDER BY paper_id, url"
)
# A paper's landing page as asked for, its attempts counted (LandingPage's fields up to
# metadata_field, then the time: a parameter, or the server's `now()` in place of the last ?).
LANDING_PAGE_UPSERT = (
    "INSERT INTO landing_pages (paper_id, url, outcome, detail, http_status,"
    " metadata_field, attempts, fetched_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?)"
    " ON CONFLICT (paper_id, url) DO UPDATE SET outcome = excluded.outcome,"
    " detail = excluded.detail, http_status = excluded.http_status,"
    " metadata_field = excluded.metadata_field,"
    " attempts = landing_pages.attempts + 1, fetched_at = excluded.fetched_at"
)
# A paper takes the abstract read from its landing page (abstract, the time, paper id).
PAPER_FROM_LANDING = (
    "UPDATE papers SET abstract = ?, evidence = 'abstract', fetch_url = NULL,"
    " evidence_reason = NULL, updated_at = ? WHERE id = ?"
)


def landing_page_values(page: LandingPage) -> tuple[Any, ...]:
    return (
        page.paper_id,
        page.url,
        page.outcome,
        page.detail,
        page.http_status,
        page.metadata_field,
    )
