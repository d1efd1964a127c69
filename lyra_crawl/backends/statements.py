"""Every statement of the SQL stores, declared once (backends.dialects compiles each per
dialect). Named parameters (`:name`); the store's plans (backends.store) give their values. The
few statements with no common form are `Statement.per_dialect`, each saying what differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from sqlalchemy import (
    Table,
    bindparam,
    case,
    exists,
    func,
    literal_column,
    null,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert as insert_into

from lyra_crawl.backends import paper_saving, rows
from lyra_crawl.backends.dialects import (
    LEASE_NOW,
    NOW,
    After,
    AnyOf,
    EpochSeconds,
    IdArray,
    LeaseEnd,
    NoneOf,
    Statement,
)
from lyra_crawl.backends.tables import (
    batch_entries,
    batch_rate_waits,
    batches,
    citation_fetches,
    citations,
    intervention_queue,
    landing_pages,
    paper_index_blocks,
    paper_index_generation,
    paper_words,
    papers,
    queries,
    selection_candidates,
    selections,
    serp_cache,
    serp_items,
    serp_pages,
)
from lyra_crawl.records import RESUMABLE_STATUSES, PageRecord, QueryRecord, StoredPaper

# -- queries ---------------------------------------------------------------------------------

# What a query's insert names: the record's fields, and the crawl's process.
QUERY_COLUMNS = (*rows.field_names(QueryRecord), "host", "pid")
START_QUERY = Statement(
    insert_into(queries).values(status=text("'running'"), started_at=NOW).returning(queries.c.id),
    keys=QUERY_COLUMNS,
)
ENTRY_RUNS_QUERY = Statement(
    "UPDATE batch_entries SET query_id = :query_id, engine = :engine WHERE id = :entry_id"
)
_LATEST_QUERY = select(text("*")).select_from(queries).order_by(text("id DESC LIMIT 1"))
RESUMABLE_QUERY = Statement(
    _LATEST_QUERY.where(
        text(f"status IN {tuple(status.value for status in RESUMABLE_STATUSES)}"),
        text("normalized_query = :normalized_query AND (:any_engine OR engine = :engine)"),
        text("sources = :sources AND serp_page = :serp_page"),
        text("serp_max_pages = :serp_max_pages AND strategy = :strategy"),
        queries.c.time_range.is_not_distinct_from(bindparam("time_range")),
        queries.c.region.is_not_distinct_from(bindparam("region")),
    )
)
QUERY = Statement(_LATEST_QUERY.where(text("id = :id")))
QUERY_FOR_JOB = Statement(_LATEST_QUERY.where(text("job_id = :job_id")))
REOPEN_QUERY = Statement(
    update(queries)
    .values(status=text("'running'"), host=bindparam("host"), pid=bindparam("pid"))
    .values(finished_at=null())
    .where(text("id = :id"))
)
FINISH_QUERY = Statement(
    update(queries)
    .values(
        status=bindparam("status"),
        stop_reason=bindparam("stop_reason", type_=queries.c.stop_reason.type),
        errors=bindparam("errors", type_=queries.c.errors.type),
        # The share of items whose relevance reaches the threshold (none: NULL).
        harvest_rate=text(
            "(SELECT AVG(CAST(CAST(relevance >= :threshold AS INTEGER) AS DOUBLE PRECISION))"
            " FROM serp_items WHERE serp_items.query_id = :id AND relevance IS NOT NULL)"
        ),
        pages_fetched=text("(SELECT COUNT(*) FROM serp_pages WHERE serp_pages.query_id = :id)"),
        items=text("(SELECT COUNT(*) FROM serp_items WHERE serp_items.query_id = :id)"),
        finished_at=NOW,
    )
    .where(text("queries.id = :id"))
    .returning(text("*"))
)
TASK_QUERY_IDS = Statement("SELECT id FROM queries WHERE task_id = :task_id ORDER BY id")
LAST_QUERY_IDS = Statement("SELECT id FROM queries ORDER BY id DESC LIMIT :last")
ALL_QUERY_IDS = Statement("SELECT id FROM queries ORDER BY id")
TASK_HARVEST_RATE = Statement(
    "SELECT AVG(harvest_rate) FROM queries WHERE task_id = :task_id AND harvest_rate IS NOT NULL"
)
TASK_ENGINES = Statement(
    "SELECT engine, COUNT(*) FROM queries WHERE task_id = :task_id GROUP BY engine"
)
MARK_CACHE_HIT = Statement(
    "UPDATE queries SET cache_hit = TRUE, cached_from = :answered_by WHERE id = :id"
)
# Running queries of this host (or of no host known: rows from before hosts were kept) whose
# process is gone are interrupted when a store is opened.
# With when each started: a pid taken again by a later process is not the crawl's.
RUNNING_HERE = Statement(
    select(queries.c.id, queries.c.pid, EpochSeconds(queries.c.started_at)).where(
        text("status = 'running' AND pid IS NOT NULL AND (host = :host OR host IS NULL)")
    )
)
INTERRUPT_QUERIES = Statement(
    update(queries)
    .values(status=text("'interrupted'"), finished_at=NOW)
    .where(AnyOf(queries.c.id, "ids"), text("status = 'running'"))
)

# -- pages and items -------------------------------------------------------------------------

# Only a URL already stored for the query is skipped (a resumed crawl); any other constraint
# (a missing page number, title) fails the whole page.
INSERT_ITEM = Statement(
    insert_into(serp_items)
    .values(fetched_at=NOW)
    .on_conflict_do_nothing(index_elements=["query_id", "normalized_url"]),
    keys=rows.ITEM_INSERT_COLUMNS,
)
PAGE_COLUMNS = (*rows.field_names(PageRecord), "items_stored")
_PAGE_KEY = ("query_id", "source", "page_number")
_page = insert_into(serp_pages).values(fetched_at=NOW)
STORE_PAGE = Statement(
    _page.on_conflict_do_update(
        index_elements=_PAGE_KEY,
        set_={c: _page.excluded[c] for c in (*PAGE_COLUMNS, "fetched_at") if c not in _PAGE_KEY},
    ),
    keys=PAGE_COLUMNS,
)
PAGES = Statement("SELECT * FROM serp_pages WHERE query_id = :id ORDER BY source, page_number")
# The pages stored for each source of a query, for query.invariants.check_query_end.
PAGES_BY_SOURCE = Statement(
    "SELECT source, COUNT(*) FROM serp_pages WHERE query_id = :id GROUP BY source"
)
ITEMS = Statement("SELECT * FROM serp_items WHERE query_id = :id ORDER BY source, rank")
EARLIER_URLS = Statement(
    "SELECT DISTINCT i.normalized_url FROM serp_items i JOIN queries q ON q.id = i.query_id"
    " WHERE q.normalized_query = (SELECT normalized_query FROM queries WHERE id = :id)"
    " AND q.id < :id"
)
# Items of the query whose normalized URL an earlier crawl of the same query stored.
REPEATED_URL_COUNT = Statement(
    "SELECT COUNT(*) FROM serp_items AS item JOIN queries AS this ON this.id = item.query_id"
    " WHERE item.query_id = :id AND EXISTS ("
    "   SELECT 1 FROM serp_items AS seen JOIN queries AS earlier ON earlier.id = seen.query_id"
    "   WHERE seen.normalized_url = item.normalized_url AND earlier.id < this.id"
    "   AND earlier.normalized_query = this.normalized_query)"
)
# The layout_changed pages stored after each engine's last ok or empty page (by time, then id:
# two pages can share a millisecond), as StaleParser rows.
STALE_PARSERS = Statement(
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
    "  FROM serp_pages p LEFT JOIN last_read r ON r.source = p.source AND r.newest = 1"
    "  WHERE p.outcome = 'layout_changed'"
    "  AND (r.id IS NULL OR (p.fetched_at, p.id) > (r.fetched_at, r.id))"
    ")"
    " SELECT source AS engine, since, pages, query_id, page_number, fetched_at FROM stale"
    " WHERE newest = 1 ORDER BY source"
)

# -- papers (backends.paper_saving plans the save) -----------------------------------------

# Papers saves run one at a time: SQLite's write lock holds every writer already; PostgreSQL
# takes the papers lock ("papr" in ASCII) for the rest of the transaction.
PAPERS_LOCK_KEY = 0x70617072
PAPERS_LOCK = Statement.per_dialect(
    sqlite=None, postgresql=f"SELECT pg_advisory_xact_lock({PAPERS_LOCK_KEY})"
)
GENERATION = Statement("SELECT generation FROM paper_index_generation WHERE id = 1")
# Moves the store's paper index generation on by one (paper_saving.StoredTitles).
NEXT_GENERATION = Statement(
    "INSERT INTO paper_index_generation (id, generation) VALUES (1, 1)"
    " ON CONFLICT (id) DO UPDATE SET generation = paper_index_generation.generation + 1"
    " RETURNING generation"
)
# The stored blocks of identifier keys, whole, and of title keys, NULL when full (by hash).
BLOCKS = Statement(
    select(paper_index_blocks.c.block_hash, IdArray(paper_index_blocks.c.paper_id))
    .where(AnyOf(paper_index_blocks.c.block_hash, "identifiers"))
    .group_by(paper_index_blocks.c.block_hash)
    .union_all(
        select(
            paper_index_blocks.c.block_hash,
            case((func.count() < bindparam("limit"), IdArray(paper_index_blocks.c.paper_id))),
        )
        .where(AnyOf(paper_index_blocks.c.block_hash, "titles"))
        .group_by(paper_index_blocks.c.block_hash)
    )
)
PAPER_TITLES = Statement(
    select(papers.c.id, papers.c.match_titles).where(AnyOf(papers.c.id, "ids"))
)
PAPERS = Statement(select(text("*")).select_from(papers).where(AnyOf(papers.c.id, "ids")))
KNOWN_WORDS = Statement(
    select(paper_words.c.word, paper_words.c.kind).where(AnyOf(paper_words.c.word, "words"))
)
UPDATE_PAPER = Statement(
    update(papers).values(updated_at=NOW).where(text("id = :paper_id")),
    keys=paper_saving.PAPER_COLUMNS,
)
INSERT_PAPER = Statement(
    insert_into(papers).values(created_at=NOW, updated_at=NOW),
    keys=("id", *paper_saving.PAPER_COLUMNS),
)
# The ids new papers take, given in one go: SQLite's next ones (the write lock is held), the
# identity's sequence in PostgreSQL.
NEW_PAPER_IDS = Statement.per_dialect(
    sqlite="WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)"
    " SELECT (SELECT COALESCE(MAX(id), 0) FROM papers) + i FROM n",
    postgresql="SELECT nextval(pg_get_serial_sequence('papers', 'id'))"
    " FROM generate_series(1, :count)",
)
ENTER_BLOCK = Statement(
    "INSERT INTO paper_index_blocks (block_hash, paper_id) VALUES (:block_hash, :paper_id)"
    " ON CONFLICT DO NOTHING"
)
KNOW_WORD = Statement(
    "INSERT INTO paper_words (word, kind) VALUES (:word, :kind) ON CONFLICT DO NOTHING"
)
LINK_ITEMS = Statement(
    "UPDATE serp_items SET paper_id = :paper_id"
    " WHERE query_id = :query_id AND normalized_url = :url"
)
FUSED_RANK = Statement(
    "UPDATE serp_items SET fused_rank = :rank WHERE query_id = :query_id AND normalized_url = :url"
)
QUERY_ATTRIBUTION = Statement(
    update(queries)
    .values(attribution=bindparam("counts", type_=queries.c.attribution.type))
    .where(text("id = :query_id"))
)


# Rows merged into another (`gone`) hand over their items, the selections that chose them, block
# memberships and landing pages
# (a block or a landing page holding both keeps the kept row's), their citations and fetched
# lists (what the kept row has already, and an edge to itself, go), then are deleted.
def _moved(column: str) -> Any:
    return case((AnyOf(column, "gone"), bindparam("kept")), else_=text(column))


def _handed_over(table: Table, columns: Sequence[str], *, where: Any = None) -> Statement:
    moved = [_moved(c) if c.endswith("paper_id") else text(c) for c in columns]
    source = (
        select(*moved)
        .select_from(table)
        .where(AnyOf("paper_id", "gone") if where is None else where)
    )
    return Statement(insert_into(table).from_select(columns, source).on_conflict_do_nothing())


ABSORB_PAPERS = (
    Statement(
        update(serp_items).values(paper_id=bindparam("kept")).where(AnyOf("paper_id", "gone"))
    ),
    Statement(
        update(selection_candidates)
        .values(paper_id=bindparam("kept"))
        .where(AnyOf("paper_id", "gone"))
    ),
    _handed_over(paper_index_blocks, ("block_hash", "paper_id")),
    _handed_over(landing_pages, [c.name for c in landing_pages.c]),
    _handed_over(
        citations,
        ("citing_paper_id", "cited_paper_id", "source", "fetched_at"),
        where=or_(AnyOf("citing_paper_id", "gone"), AnyOf("cited_paper_id", "gone")),
    ),
    Statement(
        citations.delete().where(
            or_(
                AnyOf("citing_paper_id", "gone"),
                AnyOf("cited_paper_id", "gone"),
                text("citing_paper_id = :kept AND cited_paper_id = :kept"),
            )
        )
    ),
    _handed_over(citation_fetches, [c.name for c in citation_fetches.c]),
    *(
        Statement(table.delete().where(AnyOf(column, "gone")))
        for table, column in (
            (citation_fetches, "paper_id"),
            (paper_index_blocks, "paper_id"),
            (landing_pages, "paper_id"),
            (papers, "id"),
        )
    ),
)
# The query's items without a paper, each with the one paper other queries' items at its
# normalized URL are linked to (none when they are linked to several): item id, its source,
# the paper. The unary + keeps SQLite from finding the query's items through the
# index of every item without a paper (7 ms a save after 1,000 queries; 0.04 ms by query id).
LINKS_BY_URL = Statement(
    "SELECT item.id, item.source, MIN(other.paper_id) FROM serp_items AS item"
    " JOIN serp_items AS other ON other.normalized_url = item.normalized_url"
    " WHERE item.query_id = :query_id AND +item.paper_id IS NULL"
    " AND other.query_id <> item.query_id AND other.paper_id IS NOT NULL"
    " GROUP BY item.id, item.source HAVING COUNT(DISTINCT other.paper_id) = 1"
)

LINKED_PAPERS = Statement(
    "SELECT DISTINCT paper_id FROM serp_items WHERE query_id = :query_id AND paper_id IS NOT NULL"
)
LINK_ITEM = Statement("UPDATE serp_items SET paper_id = :paper_id WHERE id = :item_id")
PAPER_SOURCES = Statement(
    select(papers.c.id, papers.c.sources, papers.c.attribution).where(AnyOf(papers.c.id, "ids"))
)
UPDATE_PAPER_SOURCES = Statement(
    update(papers)
    .values(
        sources=bindparam("paper_sources", type_=papers.c.sources.type),
        attribution=bindparam("paper_attribution"),
        updated_at=NOW,
    )
    .where(text("id = :paper_id"))
)
COPY_PAPER_LINKS = Statement(
    "UPDATE serp_items AS item SET (paper_id, fused_rank) = ("
    " SELECT paper_id, fused_rank FROM serp_items AS cached"
    " WHERE cached.query_id = :from_id AND cached.normalized_url = item.normalized_url)"
    " WHERE item.query_id = :to_id"
)
COPY_ATTRIBUTION = Statement(
    "UPDATE queries SET attribution = (SELECT attribution FROM queries WHERE id = :from_id)"
    " WHERE id = :to_id"
)
PAPERS_OF = Statement(
    "SELECT * FROM papers WHERE id IN (SELECT paper_id FROM serp_items WHERE query_id = :id)"
    " ORDER BY id"
)
ATTRIBUTION_COUNTS = Statement(
    "SELECT paper.attribution, COUNT(DISTINCT paper.id) FROM serp_items AS item"
    " JOIN papers AS paper ON paper.id = item.paper_id"
    " WHERE item.query_id = :id GROUP BY paper.attribution"
)
# Upgrades: every stored paper; its columns the upgrade to the paper index writes.
ALL_PAPERS = Statement("SELECT * FROM papers")
UPGRADE_PAPER = Statement(
    update(papers).where(text("id = :paper_id")), keys=paper_saving.UPGRADED_COLUMNS
)
MATCH_TITLES = Statement(
    update(papers).values(match_titles=bindparam("titles")).where(text("id = :paper_id"))
)

# The results of a task's, a batch's or one query's queries linked to a paper past a paper id
# (`after_id`), or those of every query linked to a paper a selection chose: FOUND_PAGE_IDS
# reads the ids of a page of papers along serp_items' paper index, FOUND_PAPERS and FOUND_BY
# the page up to its last id (`last_id`). CROSS JOIN keeps SQLite walking the paper index from
# the page's start (each page reads its own results only); else it reads every result of the
# task's queries for every page, then sorts.
_FOUND = (
    "FROM serp_items AS item CROSS JOIN queries AS query"
    " WHERE query.id = item.query_id AND item.paper_id > :after_id AND (query.task_id = :task_id"
    " OR query.batch_entry_id IN (SELECT id FROM batch_entries WHERE batch_id = :batch_id)"
    " OR query.id = :query_id OR item.paper_id IN (SELECT paper_id FROM selection_candidates"
    "   WHERE selection_id = :selection_id AND final_rank IS NOT NULL))"
)
FOUND_PAGE_IDS = Statement(
    f"SELECT item.paper_id {_FOUND} GROUP BY item.paper_id ORDER BY item.paper_id LIMIT :limit"
)
# StoredPaper's columns only: the rows' match_records (the merge's copy of every record) would
# be read and dropped.
FOUND_PAPERS = Statement(
    f"SELECT {', '.join(field.name for field in fields(StoredPaper))} FROM papers"
    f" WHERE id IN (SELECT item.paper_id {_FOUND} AND item.paper_id <= :last_id) ORDER BY id"
)
FOUND_BY = Statement(
    "SELECT item.paper_id, query.query_text, COALESCE(item.fused_rank, item.rank) AS rank"
    f" {_FOUND} AND item.paper_id <= :last_id ORDER BY item.paper_id, query.id"
)

# -- the citation graph ----------------------------------------------------------------------

# A paper read from its abstract: where a citation graph starts and goes on from.
_READ_FROM_ABSTRACT = "paper.evidence = 'abstract'"
# The query's papers by their best fused rank.
CITATION_SEEDS = Statement(
    "SELECT paper.* FROM papers AS paper JOIN ("
    "  SELECT paper_id, MIN(fused_rank) AS best FROM serp_items"
    "  WHERE query_id = :id AND paper_id IS NOT NULL GROUP BY paper_id"
    ") AS ranked ON ranked.paper_id = paper.id"
    f" WHERE {_READ_FROM_ABSTRACT}"
    " ORDER BY ranked.best IS NULL, ranked.best, paper.id LIMIT :limit"
)
PAPER_EXISTS = Statement("SELECT 1 FROM papers WHERE id = :id")
ADD_EDGE = Statement(
    insert_into(citations).values(fetched_at=NOW).on_conflict_do_nothing(),
    keys=("citing_paper_id", "cited_paper_id", "source"),
)
# A fetch's row: created, or its links added to and its status and detail set; left out when
# its paper was merged into another row meanwhile.
UPSERT_FETCH = Statement(
    (
        _fetch := insert_into(citation_fetches).from_select(
            [*rows.CITATION_FETCH_COLUMNS, "fetched_at"],
            select(*(bindparam(f"fetch_{c}") for c in rows.CITATION_FETCH_COLUMNS), NOW).where(
                exists().where(text("papers.id = :fetch_paper_id")).select_from(papers)
            ),
        )
    ).on_conflict_do_update(
        index_elements=["query_id", "paper_id", "source", "relation"],
        set_={
            "links": citation_fetches.c.links + _fetch.excluded.links,
            "status": _fetch.excluded.status,
            "detail": _fetch.excluded.detail,
            "fetched_at": _fetch.excluded.fetched_at,
        },
    )
)
# A query's citation list fetches, in the order they were planned.
CITATION_FETCHES = Statement(
    "SELECT * FROM citation_fetches WHERE query_id = :id ORDER BY level, paper_id, source, relation"
)
# The papers a query's fetches of one level reached, most edges first: a paper's references
# start at it, its citations end there.
CITATION_FRONTIER = Statement(
    "SELECT paper.* FROM papers AS paper JOIN ("
    "  SELECT reached, COUNT(*) AS edges FROM ("
    "    SELECT edge.cited_paper_id AS reached FROM citation_fetches AS list"
    "    JOIN citations AS edge"
    "    ON edge.citing_paper_id = list.paper_id AND edge.source = list.source"
    "    WHERE list.query_id = :id AND list.level = :level AND list.relation = 'references'"
    "    UNION ALL"
    "    SELECT edge.citing_paper_id FROM citation_fetches AS list"
    "    JOIN citations AS edge"
    "    ON edge.cited_paper_id = list.paper_id AND edge.source = list.source"
    "    WHERE list.query_id = :id AND list.level = :level AND list.relation = 'citations'"
    "  ) AS ends GROUP BY reached"
    ") AS frontier ON frontier.reached = paper.id"
    f" WHERE {_READ_FROM_ABSTRACT} AND paper.id NOT IN"
    "  (SELECT paper_id FROM citation_fetches WHERE query_id = :id)"
    " ORDER BY frontier.edges DESC, paper.id LIMIT :limit"
)
# A task's queries and those whose cached results they re-used, and the edges their fetches
# read.
_TASK_EDGES = (
    "WITH task AS (SELECT id FROM queries WHERE task_id = :task_id"
    " UNION SELECT cached_from FROM queries WHERE task_id = :task_id"
    " AND cached_from IS NOT NULL),"
    " fetched AS (SELECT DISTINCT paper_id, source, relation FROM citation_fetches"
    " WHERE query_id IN (SELECT id FROM task)),"
    " edges AS (SELECT edge.* FROM citations AS edge JOIN fetched"
    " ON fetched.relation = 'references' AND edge.citing_paper_id = fetched.paper_id"
    " AND edge.source = fetched.source"
    " UNION SELECT edge.* FROM citations AS edge JOIN fetched"
    " ON fetched.relation = 'citations' AND edge.cited_paper_id = fetched.paper_id"
    " AND edge.source = fetched.source)"
)
TASK_CITATION_EDGES = Statement(
    f"{_TASK_EDGES} SELECT * FROM edges ORDER BY citing_paper_id, cited_paper_id, source"
)
# The task's papers: those its queries found and those at the ends of its edges.
TASK_CITATION_PAPERS = Statement(
    f"{_TASK_EDGES} SELECT * FROM papers WHERE id IN (SELECT paper_id FROM serp_items"
    " WHERE query_id IN (SELECT id FROM task)) OR id IN (SELECT citing_paper_id FROM edges)"
    " OR id IN (SELECT cited_paper_id FROM edges) ORDER BY id"
)

# -- landing pages (the papers spider) -------------------------------------------------------

# The papers a task's queries (task id) or one query (query id) found.
_PAPERS_OF_TARGET = (
    "SELECT item.paper_id FROM serp_items AS item JOIN queries AS query"
    " ON query.id = item.query_id WHERE query.task_id = :task_id OR query.id = :query_id"
)
# Those queued for a fetch, each with its latest landing page.
PAPERS_TO_READ = Statement(
    "SELECT paper.id AS paper_id, paper.title, paper.fetch_url, paper.fetch_urls,"
    " last.url AS last_url, last.outcome AS last_outcome FROM papers AS paper"
    " LEFT JOIN (SELECT paper_id, url, outcome, ROW_NUMBER() OVER"
    " (PARTITION BY paper_id ORDER BY fetched_at DESC, url) AS latest FROM landing_pages)"
    " AS last ON last.paper_id = paper.id AND last.latest = 1"
    f" WHERE paper.evidence = 'fetch' AND paper.id IN ({_PAPERS_OF_TARGET})"
    " ORDER BY paper.id"
)
LANDING_PAGES = Statement(
    f"SELECT * FROM landing_pages WHERE paper_id IN ({_PAPERS_OF_TARGET}) ORDER BY paper_id, url"
)
LANDING_COLUMNS = ("paper_id", "url", "outcome", "detail", "http_status", "metadata_field")
# A paper's landing page as asked for, its attempts counted.
_landing = insert_into(landing_pages).values(attempts=1, fetched_at=NOW)
RECORD_LANDING_PAGE = Statement(
    _landing.on_conflict_do_update(
        index_elements=["paper_id", "url"],
        set_={
            **{c: _landing.excluded[c] for c in (*LANDING_COLUMNS[2:], "fetched_at")},
            "attempts": landing_pages.c.attempts + 1,
        },
    ),
    keys=LANDING_COLUMNS,
)
# A paper takes the abstract read from its landing page.
PAPER_FROM_LANDING = Statement(
    update(papers)
    .values(
        abstract=bindparam("paper_abstract"),
        evidence=text("'abstract'"),
        fetch_url=null(),
        evidence_reason=null(),
        updated_at=NOW,
    )
    .where(text("id = :paper_id"))
)

# -- search-level cache ----------------------------------------------------------------------

FRESH_CACHE_ENTRY = Statement(
    select(serp_cache.c.query_id).where(text("cache_key = :key"), After("expires_at", "now"))
)
_cache = insert_into(serp_cache)
STORE_CACHE_ENTRY = Statement(
    _cache.on_conflict_do_update(
        index_elements=["cache_key"],
        set_={c: _cache.excluded[c] for c in ("query_id", "created_at", "expires_at")},
    ),
    keys=("cache_key", "query_id", "created_at", "expires_at"),
)

# -- interventions ---------------------------------------------------------------------------

ADD_INTERVENTION = Statement(
    insert_into(intervention_queue)
    .values(status=text("'open'"), created_at=NOW)
    .returning(intervention_queue.c.id),
    keys=("engine", "url", "query_id", "kind", "detail"),
)
OPEN_INTERVENTIONS = Statement("SELECT * FROM intervention_queue WHERE status = 'open' ORDER BY id")
RESOLVE_INTERVENTION = Statement(
    update(intervention_queue)
    .values(status=text("'resolved'"), resolved_at=NOW)
    .where(text("id = :id AND status = 'open'"))
)

# -- batches ---------------------------------------------------------------------------------

CREATE_BATCH = Statement(
    insert_into(batches).values(created_at=NOW).returning(batches.c.id, batches.c.created_at),
    keys=("source", "content_hash"),
)
ADD_ENTRY = Statement(
    insert_into(batch_entries),
    keys=("batch_id", "position", "query_text", "arguments", "state", "detail", "engine"),
)
_BATCH = (
    "SELECT b.id, b.source, b.content_hash, b.created_at,"
    " (SELECT COUNT(*) FROM batch_entries e WHERE e.batch_id = b.id) AS entries"
    " FROM batches b WHERE {} ORDER BY b.id DESC LIMIT 1"
)
BATCH = Statement(_BATCH.format("b.id = :id"))
BATCH_BY_HASH = Statement(_BATCH.format("b.content_hash = :content_hash"))
# This host's crawls holding entries of the batch (those of dead ones end their leases at once).
LEASE_OWNERS = Statement(
    "SELECT DISTINCT lease_owner FROM batch_entries WHERE batch_id = :batch_id"
    " AND state = 'running' AND lease_owner LIKE :host_owners"
)
END_LEASES = Statement(
    update(batch_entries)
    .values(lease_until=null())
    .where(text("batch_id = :batch_id"), AnyOf("lease_owner", "owners"))
)


def _to_take(state: str, *more: Any) -> Statement:
    """The batch's first entries in `state` not skipped (their engine, named or their query's;
    NO_ENGINE for none yet, not among `skip`), up to `limit`, in position order. SKIP LOCKED:
    an entry another worker is taking right now is left to it."""
    return Statement(
        select(batch_entries.c.id)
        .where(
            text(f"batch_id = :batch_id AND state = '{state}'"),
            NoneOf("COALESCE(engine, '')", "skip"),
            *more,
        )
        .order_by(batch_entries.c.position)
        .limit(bindparam("limit"))
        .with_for_update(skip_locked=True)
    )


PENDING_TO_TAKE = _to_take("pending")
# Running entries whose lease ran out (by now: SQLite's clock reads milliseconds): their
# worker died or hung.
ABANDONED_TO_TAKE = _to_take(
    "running", or_(batch_entries.c.lease_until.is_(None), batch_entries.c.lease_until <= LEASE_NOW)
)
# Their crawl stopped holding them: its query is interrupted, so the crawl taking the entry
# resumes it instead of storing its pages again.
INTERRUPT_ABANDONED = Statement(
    update(queries)
    .values(status=text("'interrupted'"), finished_at=NOW)
    .where(
        queries.c.id.in_(select(batch_entries.c.query_id).where(AnyOf(batch_entries.c.id, "ids"))),
        text("queries.status = 'running'"),
    )
)
TAKE_ENTRIES = Statement(
    update(batch_entries)
    .values(
        state=text("'running'"),
        attempts=text("attempts + 1"),
        lease_owner=bindparam("owner"),
        lease_until=LeaseEnd("lease_s"),
        started_at=func.coalesce(batch_entries.c.started_at, NOW),
    )
    .where(AnyOf(batch_entries.c.id, "ids"))
    .returning(text("*"))
)
PENDING_ENGINES = Statement(
    "SELECT COALESCE(engine, ''), COUNT(*) FROM batch_entries"
    " WHERE batch_id = :batch_id AND state = 'pending' GROUP BY 1"
)
# An entry's new state; `detached`: without its query and the engine chosen for it.
SET_ENTRY_STATE = Statement(
    update(batch_entries)
    .values(
        state=bindparam("new_state"),
        query_id=text("CASE WHEN :detached THEN NULL ELSE COALESCE(:query, query_id) END"),
        engine=text("CASE WHEN :detached THEN NULL ELSE engine END"),
        detail=bindparam("new_detail"),
        finished_at=case((text(":finished"), NOW)),
        lease_owner=null(),
        lease_until=null(),
    )
    .where(text("id = :entry_id"))
)
RENEW_LEASES = Statement(
    update(batch_entries)
    .values(lease_until=LeaseEnd("lease_s"))
    .where(AnyOf(batch_entries.c.id, "ids"), text("state = 'running' AND lease_owner = :owner"))
)
BATCH_ENTRIES = Statement(
    "SELECT * FROM batch_entries WHERE batch_id = :batch_id ORDER BY position"
)
_ENTRIES_IN = (
    select(text("*"))
    .select_from(batch_entries)
    .where(text("batch_id = :batch_id"), AnyOf("state", "states"))
)
ENTRIES_IN = Statement(_ENTRIES_IN.order_by(text("position")).limit(bindparam("limit")))
COUNT_ENTRIES_IN = Statement(select(func.count()).select_from(_ENTRIES_IN.subquery()))

# -- batch figures: each a GROUP BY over the batch's queries, reached through the indexes on
# batch_entries (batch_id, ...), queries (batch_entry_id), serp_pages (query_id, ...) and
# intervention_queue (query_id): no query's rows are loaded one by one.


_BATCH_JOIN = "batch_entries AS e JOIN queries AS q ON q.batch_entry_id = e.id"


def _of_batch(*joins: str) -> str:
    """FROM a batch's queries, more tables joined."""
    joined = "".join(f" JOIN {table}" for table in joins)
    return f"FROM {_BATCH_JOIN}{joined} WHERE e.batch_id = :batch_id"


_BATCH_QUERIES = _of_batch()
_BATCH_PAGES = _of_batch("serp_pages AS p ON p.query_id = q.id")
ENTRY_STATES = Statement(
    "SELECT state, COUNT(*), MIN(started_at), MAX(finished_at) FROM batch_entries"
    " WHERE batch_id = :batch_id GROUP BY state ORDER BY state"
)
# Entries a cache entry answered: done, their query another entry's.
CACHED_ENTRIES = Statement(
    select(func.count())
    .select_from(text("batch_entries AS e JOIN queries AS q ON q.id = e.query_id"))
    .where(
        text("e.batch_id = :batch_id AND e.state = 'done'"),
        literal_column("q.batch_entry_id").is_distinct_from(literal_column("e.id")),
    )
)
BATCH_PAGE_COUNTS = Statement(
    f"SELECT e.state, p.source, q.cache_hit, COUNT(*), SUM(p.items_stored) {_BATCH_PAGES}"
    " GROUP BY e.state, p.source, q.cache_hit"
)
BATCH_QUERY_COUNT = Statement(f"SELECT COUNT(*) {_BATCH_QUERIES}")
BATCH_RATE_WAITS = Statement(
    "SELECT engine, SUM(waits) FROM batch_rate_waits WHERE batch_id = :batch_id GROUP BY engine"
)
_waits = insert_into(batch_rate_waits)
RECORD_RATE_WAITS = Statement(
    _waits.on_conflict_do_update(
        index_elements=["batch_id", "owner", "engine"], set_={"waits": _waits.excluded.waits}
    ),
    keys=("batch_id", "owner", "engine", "waits"),
)
# Each source's stop reasons over the batch's queries: the entries of a JSON object, and their
# order byte by byte (PostgreSQL's by the database's locale else).
STOP_REASONS = Statement.per_dialect(
    sqlite="SELECT reason.key, reason.value, COUNT(*)"
    f" {_of_batch('json_each(q.stop_reason) AS reason')}"
    " GROUP BY reason.key, reason.value ORDER BY COUNT(*) DESC, reason.value, reason.key",
    postgresql="SELECT reason.key, reason.value, COUNT(*)"
    f" {_of_batch('LATERAL jsonb_each_text(q.stop_reason) AS reason ON true')}"
    " GROUP BY reason.key, reason.value"
    ' ORDER BY COUNT(*) DESC, reason.value COLLATE "C", reason.key COLLATE "C"',
)
BATCH_BLOCKS = Statement(
    "SELECT i.engine, i.kind, COUNT(*)"
    f" {_of_batch('intervention_queue AS i ON i.query_id = q.id')}"
    " GROUP BY i.engine, i.kind ORDER BY i.engine, i.kind"
)
# Requests per engine in buckets of `bucket_s` seconds, by the time each page was stored (its
# answer, parsed); cache replays left out.
_bucket = (
    EpochSeconds(text("p.fetched_at")).op("/")(bindparam("bucket_s")).op("*")(bindparam("bucket_s"))
)
REQUESTS_OVER_TIME = Statement(
    select(text("p.source"), _bucket.label("bucket"), func.count())
    .select_from(text(_BATCH_JOIN + " JOIN serp_pages AS p ON p.query_id = q.id"))
    .where(text("e.batch_id = :batch_id AND NOT q.cache_hit"))
    .group_by(text("p.source, bucket"))
    .order_by(text("bucket, p.source"))
)
# Novelty (the stored rate, else items kept / results) and harvest per source and page number,
# as moments over the batch's pages; cache replays left out.
DEPTH_RATES = Statement(
    "SELECT source, page_number, COUNT(*),"
    " COUNT(novelty), SUM(novelty), SUM(novelty * novelty),"
    " COUNT(harvest), SUM(harvest), SUM(harvest * harvest)"
    " FROM (SELECT p.source, p.page_number, p.harvest_rate AS harvest,"
    "   COALESCE(p.novelty_rate,"
    "     CAST(p.items_stored AS DOUBLE PRECISION) / NULLIF(p.results, 0))"
    f"   AS novelty {_BATCH_PAGES} AND NOT q.cache_hit) AS page"
    " GROUP BY source, page_number ORDER BY source, page_number"
)
BATCH_QUERY_IDS = Statement(f"SELECT q.id {_BATCH_QUERIES} ORDER BY e.position, q.id")

# -- selections (`scrapy select`'s audit) ----------------------------------------------------

RECORD_SELECTION = Statement(
    insert_into(selections).returning(selections.c.id), keys=rows.SELECTION_COLUMNS
)
# A candidate's paper merged away (and deleted) since the selection read it is not named.
ADD_CANDIDATES = Statement(
    insert_into(selection_candidates).values(
        paper_id=select(papers.c.id)
        .where(papers.c.id == bindparam("candidate_paper"))
        .scalar_subquery()
    ),
    keys=[column for column in rows.CANDIDATE_COLUMNS if column != "paper_id"],
)
SELECTION = Statement("SELECT * FROM selections WHERE id = :id")
SELECTION_CANDIDATES = Statement(
    "SELECT * FROM selection_candidates WHERE selection_id = :id ORDER BY position"
)
# What moves whenever the documents of some queries (`ids`) may have changed: the paper index's
# generation (every save of papers and every abstract read from a landing page), their last
# result (results are only ever added) and their last start (a store made anew at the same place
# starts its queries later).
DOCUMENTS_VERSION = Statement(
    select(
        select(paper_index_generation.c.generation).where(text("id = 1")).scalar_subquery(),
        select(func.max(serp_items.c.id))
        .where(AnyOf(serp_items.c.query_id, "ids"))
        .scalar_subquery(),
        select(func.max(queries.c.started_at)).where(AnyOf(queries.c.id, "ids")).scalar_subquery(),
    )
)
