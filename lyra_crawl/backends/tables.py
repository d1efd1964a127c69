"""Every table of the SQL backends, declared once (one SQLAlchemy MetaData) and compiled to each
dialect's DDL: SQLite's types for the embedded file, PostgreSQL's for the shared database.

Where the two dialects store a value differently the column's type says it, by name:
`Key` (SQLite's INTEGER rowid, PostgreSQL's bigint identity), `Instant` (ISO 8601 text,
timestamptz), `Json` (text, jsonb), `Flag` (0/1, boolean), `Real` (REAL, double precision),
`Sorted` (text; COLLATE "C" in PostgreSQL, so reports sort as SQLite does whatever the locale)
and `LeaseClock` (SQLite: epoch seconds of this machine; PostgreSQL: timestamptz of the
server's clock, which every node shares). Table names are fixed by DESIGN.md; columns may
grow (backends.migrations adds them to older stores). The coordination tables are created only
where the SQLite Coordinator runs (COORDINATION).
"""

from __future__ import annotations

from sqlalchemy import (
    REAL,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, JSONB, TIMESTAMP

PG = "postgresql"
Key = BigInteger().with_variant(Integer(), "sqlite")
Instant = Text().with_variant(TIMESTAMP(timezone=True), PG)
Json = Text().with_variant(JSONB(), PG)
Flag = Integer().with_variant(Boolean(), PG)
Real = REAL().with_variant(DOUBLE_PRECISION(), PG)
Sorted = Text().with_variant(Text(collation="C"), PG)
LeaseClock = REAL().with_variant(TIMESTAMP(timezone=True), PG)

metadata = MetaData()


def _id() -> Column:
    return Column("id", Key, Identity(), primary_key=True)


def _ref(column: str, target: str, *, nullable: bool = False) -> Column:
    return Column(column, Key, ForeignKey(target), nullable=nullable)


def _text(name: str, *, default: str | None = None, nullable: bool = True) -> Column:
    if default is None:
        return Column(name, Text, nullable=nullable)
    return Column(name, Text, nullable=False, server_default=text(f"'{default}'"))


def _count(name: str, default: int | None = 0) -> Column:
    return Column(name, Integer, nullable=False, server_default=text(str(default)))


schema_version = Table("schema_version", metadata, Column("version", Integer, nullable=False))

# One row per (query, crawl).
queries = Table(
    "queries",
    metadata,
    _id(),
    _text("query_text", nullable=False),
    _text("normalized_query", nullable=False),
    _text("task_id"),
    Column("engine", Sorted, nullable=False),
    _text("sources", default="serp"),
    _text("time_range"),
    _text("region"),
    _count("serp_page", 1),
    Column("serp_max_pages", Integer, nullable=False),
    _text("strategy", nullable=False),
    _text("status", default="running"),  # running | finished | cancelled | interrupted
    Column("stop_reason", Json),  # {source: reason}
    _count("pages_fetched"),
    _count("items"),
    Column("harvest_rate", Real),
    Column("selection", Json),  # how the engine was chosen
    Column("errors", Json),  # {source: what failed}
    Column("attribution", Json),  # {both|api_only|serp_only: papers}
    Column("cache_hit", Flag, nullable=False, server_default=false()),
    Column("cached_from", Key),  # the query whose results were re-used
    _text("job_id"),
    Column("batch_entry_id", Key),  # the batch entry it ran for
    # The crawl's process: a pid means nothing without its host (a dead crawl is judged only
    # on its own host).
    _text("host"),
    Column("pid", Integer),
    Column("started_at", Instant, nullable=False),
    Column("finished_at", Instant),
)
Index("queries_normalized", queries.c.normalized_query)
Index("queries_task", queries.c.task_id)
Index("queries_batch_entry", queries.c.batch_entry_id)
_RUNNING = queries.c.status == "running"
Index("queries_running", queries.c.host, postgresql_where=_RUNNING, sqlite_where=_RUNNING)

# One row per page fetched, written in the same transaction as that page's items.
serp_pages = Table(
    "serp_pages",
    metadata,
    _id(),
    _ref("query_id", "queries.id"),
    Column("source", Sorted, nullable=False),
    Column("page_number", Integer, nullable=False),
    _text("outcome", nullable=False),
    Column("results", Integer, nullable=False),
    Column("items_stored", Integer, nullable=False),
    Column("novelty_rate", Real),
    Column("harvest_rate", Real),
    _text("url"),
    Column("fetched_at", Instant, nullable=False),
    UniqueConstraint("query_id", "source", "page_number"),
)

# Canonical paper records: one row per paper across every query (backends.paper_saving).
papers = Table(
    "papers",
    metadata,
    _id(),
    Column("doi", Text, unique=True),
    _text("arxiv_id"),
    _text("pmid"),
    _text("title", nullable=False),
    _text("normalized_title", nullable=False),
    Column("match_records", Json),  # what the merge rules read of its records
    _text("match_titles"),  # their distinct titles, normalised, one a line
    Column("year", Integer),
    Column("authors", Json),  # list
    _text("venue"),
    _text("abstract"),
    Column("external_ids", Json),  # {source: id}
    _text("attribution"),  # both | api_only | serp_only
    Column("sources", Json),  # list
    Column("fetch_urls", Json),  # {pdf|landing|arxiv|doi|pubmed|result: url}
    _text("evidence"),  # abstract | fetch
    _text("fetch_url"),  # the best of fetch_urls, when evidence = fetch
    _text("evidence_reason"),  # why it must be fetched ("no abstract", ...)
    Column("created_at", Instant, nullable=False),
    Column("updated_at", Instant, nullable=False),
)
Index("papers_arxiv", papers.c.arxiv_id)
Index("papers_pmid", papers.c.pmid)

# One row per result kept: the fields of records.StoredItem (the insert derives its
# column list from it), plus `engine`, always equal to `source`.
serp_items = Table(
    "serp_items",
    metadata,
    _id(),
    _ref("query_id", "queries.id"),
    Column("source", Sorted, nullable=False),
    _text("engine", nullable=False),
    _text("kind", default="serp"),  # serp | api
    Column("rank", Integer, nullable=False),
    Column("page_number", Integer, nullable=False),
    Column("position", Integer),  # place on its page, from 1
    _text("url", nullable=False),
    _text("normalized_url", nullable=False),
    _text("title", nullable=False),
    *(_text(name) for name in ("snippet", "date", "doi", "arxiv_id", "pmid")),
    Column("authors", Json),  # list
    Column("year", Integer),
    *(_text(name) for name in ("venue", "abstract", "source_id", "pdf_url")),
    Column("relevance", Real),
    Column("fused_rank", Integer),
    _ref("paper_id", "papers.id", nullable=True),
    Column("fetched_at", Instant, nullable=False),
    UniqueConstraint("query_id", "normalized_url"),
)
Index("serp_items_normalized_url", serp_items.c.normalized_url)
Index("serp_items_doi", serp_items.c.doi)
Index("serp_items_paper", serp_items.c.paper_id)

# The paper index's blocks (papers.paper_index): a paper is compared with the papers sharing a
# block key with it, an identifier ("doi:10.1/x") or a key of a title, kept as a 64-bit hash of
# its text (backends.paper_saving.block_hash). A block stops growing at 32 papers.
paper_index_blocks = Table(
    "paper_index_blocks",
    metadata,
    Column("block_hash", Key, nullable=False),
    _ref("paper_id", "papers.id"),
    PrimaryKeyConstraint("block_hash", "paper_id"),
    sqlite_with_rowid=False,
)
Index("paper_index_blocks_paper", paper_index_blocks.c.paper_id)

# Words of stored records' author names and venues (kind: name | venue): a citation around a
# title is read with them (papers.canonical), as the in-memory index reads it with its own.
paper_words = Table(
    "paper_words",
    metadata,
    Column("word", Sorted, nullable=False),
    _text("kind", nullable=False),
    PrimaryKeyConstraint("word", "kind"),
    sqlite_with_rowid=False,
)

# One row, moved on by every save of papers, so a process knows whether another one saved
# papers since its own last save (backends.paper_saving.StoredTitles).
paper_index_generation = Table(
    "paper_index_generation",
    metadata,
    Column("id", Integer, CheckConstraint("id = 1"), primary_key=True, autoincrement=False),
    Column("generation", Key, nullable=False),
)

# The citation graph: `citing_paper_id` cites `cited_paper_id`, as `source` (an API) lists it
# (session.citations). One row per pair and source; never from a paper to itself.
citations = Table(
    "citations",
    metadata,
    _ref("citing_paper_id", "papers.id"),
    _ref("cited_paper_id", "papers.id"),
    _text("source", nullable=False),
    Column("fetched_at", Instant, nullable=False),
    UniqueConstraint("citing_paper_id", "cited_paper_id", "source"),
)
Index("citations_cited", citations.c.cited_paper_id)

# Each list a query fetched of a paper: its references or its citations at one source, the
# level it was fetched at (1: the query's papers; 2: the papers those reached) and how it ended.
citation_fetches = Table(
    "citation_fetches",
    metadata,
    _ref("query_id", "queries.id"),
    _ref("paper_id", "papers.id"),
    _text("source", nullable=False),
    _text("relation", nullable=False),  # references | citations
    Column("level", Integer, nullable=False),
    _text("status", nullable=False),  # running | done | quota | blocked | error | …
    _count("links"),  # papers read at the other end
    _text("detail", default=""),
    Column("fetched_at", Instant, nullable=False),
    PrimaryKeyConstraint("query_id", "paper_id", "source", "relation"),
)
Index("citation_fetches_paper", citation_fetches.c.paper_id)

# Papers' landing pages the papers spider asked for: one row per paper and URL, with what the
# last request gave (papers.landing.LandingOutcome).
landing_pages = Table(
    "landing_pages",
    metadata,
    _ref("paper_id", "papers.id"),
    _text("url", nullable=False),  # the page asked for, before any redirect
    _text("outcome", nullable=False),  # abstract | no_metadata | not_found | ...
    _text("detail", default=""),  # why, in words
    Column("http_status", Integer),
    _text("metadata_field"),  # the field the abstract was read from
    _count("attempts", 1),
    Column("fetched_at", Instant, nullable=False),
    PrimaryKeyConstraint("paper_id", "url"),
)

# CAPTCHA / block pages awaiting a person.
intervention_queue = Table(
    "intervention_queue",
    metadata,
    _id(),
    Column("engine", Sorted, nullable=False),
    _text("url", nullable=False),
    _ref("query_id", "queries.id", nullable=True),
    Column("kind", Sorted, nullable=False),
    _text("detail"),
    _text("status", default="open"),  # open | resolved
    Column("created_at", Instant, nullable=False),
    Column("resolved_at", Instant),
)
Index("intervention_queue_query", intervention_queue.c.query_id)

# Search-level cache: key -> the query whose results answer it.
serp_cache = Table(
    "serp_cache",
    metadata,
    Column("cache_key", Text, primary_key=True),
    _ref("query_id", "queries.id"),
    Column("created_at", Instant, nullable=False),
    Column("expires_at", Instant, nullable=False),
)

# Batches recorded by `scrapy batch FILE`, and their entries.
batches = Table(
    "batches",
    metadata,
    _id(),
    _text("source", nullable=False),  # the file it was read from
    _text("content_hash", nullable=False),  # sha256 of the file's text
    Column("created_at", Instant, nullable=False),
)
Index("batches_hash", batches.c.content_hash)

batch_entries = Table(
    "batch_entries",
    metadata,
    _id(),
    _ref("batch_id", "batches.id"),
    Column("position", Integer, nullable=False),  # in the file, from 1
    _text("query_text", nullable=False),
    Column("arguments", Json, nullable=False),  # the spider arguments it runs with
    _text("state", nullable=False),  # pending | running | done | failed | rejected
    _count("attempts"),
    _ref("query_id", "queries.id", nullable=True),
    _text("engine"),
    _text("detail", default=""),  # why it failed or was rejected; 'cached'
    _text("lease_owner"),  # host:pid of the crawl running it
    Column("lease_until", LeaseClock),
    Column("started_at", Instant),
    Column("finished_at", Instant),
    UniqueConstraint("batch_id", "position"),
)
Index(
    "batch_entries_state", batch_entries.c.batch_id, batch_entries.c.state, batch_entries.c.position
)

# Each crawl of a batch records its rate-limit waits per engine as it runs (its stats), so that
# progress read from the store (scrapy batch --processes, --scrapyd) shows them.
batch_rate_waits = Table(
    "batch_rate_waits",
    metadata,
    _ref("batch_id", "batches.id"),
    _text("owner", nullable=False),  # host:pid of the crawl
    _text("engine", nullable=False),
    Column("waits", Integer, nullable=False),
    PrimaryKeyConstraint("batch_id", "owner", "engine"),
)

# Each selection `scrapy select` made (its audit, records.SelectionRecord): the question,
# the facets named and carried, what they kept, each stage's run (model and version, or why it
# was skipped), the corpus it ran on and that corpus's version, when.
selections = Table(
    "selections",
    metadata,
    _id(),
    _text("question", nullable=False),
    _text("conversation"),
    _text("search_text", nullable=False),
    Column("facets_named", Json, nullable=False),  # list of facets as described
    Column("facets_carried", Json, nullable=False),
    _text("facet_note", default=""),
    Column("documents_kept", Integer, nullable=False),
    Column("documents_total", Integer, nullable=False),
    Column("stages", Json, nullable=False),  # [{name, ran, detail, model}]
    _text("reason", default=""),  # why there is no relevant evidence
    Column("corpus", Json, nullable=False),  # SelectionCorpus: task, batch, queries, file
    _text("corpus_version", nullable=False),
    Column("selected_at", Instant, nullable=False),
)

# Every candidate of a selection, in the order its last stage left them (`position`, from 1):
# each stage's score, its rank among the hits (NULL: not chosen), and over the store the paper
# it is (a merge hands it over to the row it keeps, like a result's paper).
selection_candidates = Table(
    "selection_candidates",
    metadata,
    _ref("selection_id", "selections.id"),
    Column("position", Integer, nullable=False),
    _text("document_id", nullable=False),
    _ref("paper_id", "papers.id", nullable=True),
    Column("chunk_index", Integer, nullable=False),
    Column("keyword", Real),
    Column("keyword_rank", Integer),
    Column("keyword_coverage", Real),
    Column("semantic", Real),
    Column("semantic_rank", Integer),
    Column("fused", Real),
    Column("fused_rank", Integer),
    Column("cross_encoder", Real),
    Column("llm", Real),
    Column("final", Real),
    Column("final_rank", Integer),
    PrimaryKeyConstraint("selection_id", "position"),
)
Index("selection_candidates_paper", selection_candidates.c.paper_id)

# -- coordination (the SQLite Coordinator's; Redis keeps its own) ------------------------------

# Daily quotas: one row per engine and UTC date (YYYY-MM-DD).
engine_usage = Table(
    "engine_usage",
    metadata,
    _text("engine", nullable=False),
    _text("date", nullable=False),
    _count("usage_count"),
    UniqueConstraint("engine", "date"),
)

# The shared QPS gate: `next_allowed` (epoch seconds) is the lease's end while `held`, else the
# release + 1/qps.
engine_rate = Table(
    "engine_rate",
    metadata,
    Column("engine", Text, primary_key=True),
    Column("next_allowed", REAL, nullable=False),
    _count("held"),
)

# The processes waiting for an engine's slot another process holds: where to tell each that it
# is released (its wake-up socket's address, backends/sqlite/release_signals.py).
engine_rate_waiters = Table(
    "engine_rate_waiters",
    metadata,
    _text("engine", nullable=False),
    Column("address", LargeBinary, nullable=False),
    PrimaryKeyConstraint("engine", "address"),
    sqlite_with_rowid=False,
)

# Circuit breaker state per engine.
engine_health = Table(
    "engine_health",
    metadata,
    Column("engine", Text, primary_key=True),
    _text("state", default="closed"),  # closed | open | half_open
    Column("open_until", REAL),
    _count("consecutive_failures"),
    _count("trips"),
    _text("last_reason"),
    _text("trial_owner"),
    Column("updated_at", Text, nullable=False),
)

COORDINATION = frozenset({"engine_usage", "engine_rate", "engine_rate_waiters", "engine_health"})


def tables_of(dialect: str) -> list[Table]:
    """The tables a store of `dialect` holds, in the order they can be created."""
    return [t for t in metadata.sorted_tables if dialect == "sqlite" or t.name not in COORDINATION]
