-- lyra_crawl's SQLite schema (lyra_crawl.backends.sqlite). Table names are fixed by DESIGN.md; columns may grow.
-- Applied idempotently on every open; `schema_version` records the version the file was brought to
-- (lyra_crawl.backends.sqlite.database: what a version needs beyond new tables and columns).

CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER NOT NULL
);

-- One row per (query, crawl).
CREATE TABLE IF NOT EXISTS queries (
    id               INTEGER PRIMARY KEY,
    query_text       TEXT NOT NULL,
    normalized_query TEXT NOT NULL,
    task_id          TEXT,
    engine           TEXT NOT NULL,
    sources          TEXT NOT NULL DEFAULT 'serp',
    time_range       TEXT,
    region           TEXT,
    serp_page        INTEGER NOT NULL DEFAULT 1,
    serp_max_pages   INTEGER NOT NULL,
    strategy         TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'running',   -- running | finished | cancelled | interrupted
    stop_reason      TEXT,                              -- JSON: {source: reason}
    pages_fetched    INTEGER NOT NULL DEFAULT 0,
    items            INTEGER NOT NULL DEFAULT 0,
    harvest_rate     REAL,
    selection        TEXT,                              -- JSON: how the engine was chosen
    errors           TEXT,                              -- JSON: {source: what failed}
    attribution      TEXT,                              -- JSON: {both|api_only|serp_only: papers}
    cache_hit        INTEGER NOT NULL DEFAULT 0,
    cached_from      INTEGER,                           -- the query whose results were re-used
    job_id           TEXT,
    batch_entry_id   INTEGER,                           -- the batch entry it ran for
    pid              INTEGER,
    started_at       TEXT NOT NULL,
    finished_at      TEXT
);
CREATE INDEX IF NOT EXISTS queries_normalized ON queries (normalized_query);
CREATE INDEX IF NOT EXISTS queries_task ON queries (task_id);
-- A batch's queries (progress display and batch report read them every tick).
CREATE INDEX IF NOT EXISTS queries_batch_entry ON queries (batch_entry_id);

-- One row per page fetched, written in the same transaction as that page's items.
CREATE TABLE IF NOT EXISTS serp_pages (
    id             INTEGER PRIMARY KEY,
    query_id       INTEGER NOT NULL REFERENCES queries (id),
    source         TEXT NOT NULL,
    page_number    INTEGER NOT NULL,
    outcome        TEXT NOT NULL,
    results        INTEGER NOT NULL,
    items_stored   INTEGER NOT NULL,
    novelty_rate   REAL,
    harvest_rate   REAL,
    url            TEXT,
    fetched_at     TEXT NOT NULL,
    UNIQUE (query_id, source, page_number)
);

-- One row per result kept: the fields of lyra_crawl.backends.records.StoredItem (the insert
-- derives its column list from it), plus `engine`, always equal to `source`.
CREATE TABLE IF NOT EXISTS serp_items (
    id              INTEGER PRIMARY KEY,
    query_id        INTEGER NOT NULL REFERENCES queries (id),
    source          TEXT NOT NULL,
    engine          TEXT NOT NULL,
    kind            TEXT NOT NULL DEFAULT 'serp',      -- serp | api
    rank            INTEGER NOT NULL,
    page_number     INTEGER NOT NULL,
    position        INTEGER,                           -- place on its page, from 1
    url             TEXT NOT NULL,
    normalized_url  TEXT NOT NULL,
    title           TEXT NOT NULL,
    snippet         TEXT,
    date            TEXT,
    doi             TEXT,
    arxiv_id        TEXT,
    pmid            TEXT,
    authors         TEXT,                              -- JSON list
    year            INTEGER,
    venue           TEXT,
    abstract        TEXT,
    source_id       TEXT,
    pdf_url         TEXT,
    relevance       REAL,
    fused_rank      INTEGER,
    paper_id        INTEGER REFERENCES papers (id),
    fetched_at      TEXT NOT NULL,
    UNIQUE (query_id, normalized_url)
);
CREATE INDEX IF NOT EXISTS serp_items_normalized_url ON serp_items (normalized_url);
CREATE INDEX IF NOT EXISTS serp_items_doi ON serp_items (doi);
CREATE INDEX IF NOT EXISTS serp_items_paper ON serp_items (paper_id);

-- Canonical paper records: one row per paper across every query (backends.paper_saving).
CREATE TABLE IF NOT EXISTS papers (
    id               INTEGER PRIMARY KEY,
    doi              TEXT UNIQUE,
    arxiv_id         TEXT,
    pmid             TEXT,
    title            TEXT NOT NULL,
    normalized_title TEXT NOT NULL,
    match_records    TEXT,          -- JSON list: what the merge rules read of its records
    match_titles     TEXT,          -- their distinct titles, normalised, one a line
    year             INTEGER,
    authors          TEXT,          -- JSON list
    venue            TEXT,
    abstract         TEXT,
    external_ids     TEXT,          -- JSON: {source: id}
    attribution      TEXT,          -- both | api_only | serp_only
    sources          TEXT,          -- JSON list
    fetch_urls       TEXT,          -- JSON: {pdf|landing|arxiv|doi|pubmed|result: url}
    evidence         TEXT,          -- abstract | fetch
    fetch_url        TEXT,          -- the best of fetch_urls, when evidence = fetch
    evidence_reason  TEXT,          -- why it must be fetched ("no abstract", ...)
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS papers_arxiv ON papers (arxiv_id);
CREATE INDEX IF NOT EXISTS papers_pmid ON papers (pmid);

-- The paper index's blocks (lyra_crawl.papers.paper_index): a paper is compared with the papers
-- sharing a block key with it, an identifier ("doi:10.1/x") or a key of a title, kept as a
-- 64-bit hash of its text (backends.paper_saving.block_hash). A block stops growing at 32 papers.
CREATE TABLE IF NOT EXISTS paper_index_blocks (
    block_hash   INTEGER NOT NULL,
    paper_id     INTEGER NOT NULL REFERENCES papers (id),
    PRIMARY KEY (block_hash, paper_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS paper_index_blocks_paper ON paper_index_blocks (paper_id);

-- Words of stored records' author names and venues (kind: name | venue): a citation around a title
-- is read with them (lyra_crawl.papers.canonical), as the in-memory index reads it with its own.
CREATE TABLE IF NOT EXISTS paper_words (
    word         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    PRIMARY KEY (word, kind)
) WITHOUT ROWID;

-- One row: moved on by every save of papers, so a process knows whether another one saved papers
-- since its own last save (backends.paper_saving.StoredTitles).
CREATE TABLE IF NOT EXISTS paper_index_generation (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    generation   INTEGER NOT NULL
);

-- The citation graph: `citing_paper_id` cites `cited_paper_id`, as `source` (an API) lists it
-- (lyra_crawl.session.citations). One row per pair and source; never from a paper to itself.
CREATE TABLE IF NOT EXISTS citations (
    citing_paper_id  INTEGER NOT NULL REFERENCES papers (id),
    cited_paper_id   INTEGER NOT NULL REFERENCES papers (id),
    source           TEXT NOT NULL,
    fetched_at       TEXT NOT NULL,
    UNIQUE (citing_paper_id, cited_paper_id, source)
);
CREATE INDEX IF NOT EXISTS citations_cited ON citations (cited_paper_id);

-- Each list a query fetched of a paper: its references or its citations at one source, the
-- level it was fetched at (1: the query's papers; 2: the papers those reached) and how it ended.
CREATE TABLE IF NOT EXISTS citation_fetches (
    query_id     INTEGER NOT NULL REFERENCES queries (id),
    paper_id     INTEGER NOT NULL REFERENCES papers (id),
    source       TEXT NOT NULL,
    relation     TEXT NOT NULL,                 -- references | citations
    level        INTEGER NOT NULL,
    status       TEXT NOT NULL,                 -- running | done | quota | blocked | error | …
    links        INTEGER NOT NULL DEFAULT 0,    -- papers read at the other end
    detail       TEXT NOT NULL DEFAULT '',
    fetched_at   TEXT NOT NULL,
    PRIMARY KEY (query_id, paper_id, source, relation)
);
CREATE INDEX IF NOT EXISTS citation_fetches_paper ON citation_fetches (paper_id);

-- Papers' landing pages the papers spider asked for: one row per paper and URL, with what the
-- last request gave (lyra_crawl.papers.landing.LandingOutcome).
CREATE TABLE IF NOT EXISTS landing_pages (
    paper_id        INTEGER NOT NULL REFERENCES papers (id),
    url             TEXT NOT NULL,                 -- the page asked for, before any redirect
    outcome         TEXT NOT NULL,                 -- abstract | no_metadata | not_found | ...
    detail          TEXT NOT NULL DEFAULT '',      -- why, in words
    http_status     INTEGER,
    metadata_field  TEXT,                          -- the field the abstract was read from
    attempts        INTEGER NOT NULL DEFAULT 1,
    fetched_at      TEXT NOT NULL,
    PRIMARY KEY (paper_id, url)
);

-- Daily quotas: one row per engine and UTC date.
CREATE TABLE IF NOT EXISTS engine_usage (
    engine       TEXT NOT NULL,
    date         TEXT NOT NULL,      -- YYYY-MM-DD, UTC
    usage_count  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (engine, date)
);

-- The shared QPS gate: the earliest time the next request to an engine may go out.
CREATE TABLE IF NOT EXISTS engine_rate (
    engine        TEXT PRIMARY KEY,
    next_allowed  REAL NOT NULL,     -- epoch seconds: lease end while held, else release + 1/qps
    held          INTEGER NOT NULL DEFAULT 0
);

-- The processes waiting for an engine's slot another process holds: where to tell each that it
-- is released (the address of its wake-up socket, backends/sqlite/release_signals.py).
CREATE TABLE IF NOT EXISTS engine_rate_waiters (
    engine   TEXT NOT NULL,
    address  BLOB NOT NULL,
    PRIMARY KEY (engine, address)
) WITHOUT ROWID;

-- Circuit breaker state per engine.
CREATE TABLE IF NOT EXISTS engine_health (
    engine                TEXT PRIMARY KEY,
    state                 TEXT NOT NULL DEFAULT 'closed',   -- closed | open | half_open
    open_until            REAL,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    trips                 INTEGER NOT NULL DEFAULT 0,
    last_reason           TEXT,
    trial_owner           TEXT,
    updated_at            TEXT NOT NULL
);

-- CAPTCHA / block pages awaiting a person.
CREATE TABLE IF NOT EXISTS intervention_queue (
    id           INTEGER PRIMARY KEY,
    engine       TEXT NOT NULL,
    url          TEXT NOT NULL,
    query_id     INTEGER REFERENCES queries (id),
    kind         TEXT NOT NULL,
    detail       TEXT,
    status       TEXT NOT NULL DEFAULT 'open',    -- open | resolved
    created_at   TEXT NOT NULL,
    resolved_at  TEXT
);
CREATE INDEX IF NOT EXISTS intervention_queue_query ON intervention_queue (query_id);

-- Search-level cache: key -> the query whose results answer it.
CREATE TABLE IF NOT EXISTS serp_cache (
    cache_key    TEXT PRIMARY KEY,
    query_id     INTEGER NOT NULL REFERENCES queries (id),
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);

-- Batches recorded by `scrapy batch FILE`, and their entries.
CREATE TABLE IF NOT EXISTS batches (
    id            INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,                 -- the file it was read from
    content_hash  TEXT NOT NULL,                 -- sha256 of the file's text
    created_at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_hash ON batches (content_hash);

CREATE TABLE IF NOT EXISTS batch_entries (
    id            INTEGER PRIMARY KEY,
    batch_id      INTEGER NOT NULL REFERENCES batches (id),
    position      INTEGER NOT NULL,              -- in the file, from 1
    query_text    TEXT NOT NULL,
    arguments     TEXT NOT NULL,                 -- JSON: the spider arguments it runs with
    state         TEXT NOT NULL,                 -- pending | running | done | failed | rejected
    attempts      INTEGER NOT NULL DEFAULT 0,
    query_id      INTEGER REFERENCES queries (id),
    engine        TEXT,
    detail        TEXT NOT NULL DEFAULT '',      -- why it failed or was rejected; 'cached'
    lease_owner   TEXT,                          -- host:pid of the crawl running it
    lease_until   REAL,                          -- epoch seconds
    started_at    TEXT,
    finished_at   TEXT,
    UNIQUE (batch_id, position)
);
CREATE INDEX IF NOT EXISTS batch_entries_state ON batch_entries (batch_id, state, position);
-- Each crawl of a batch records its rate-limit waits per engine as it runs (its stats), so
-- that progress read from the store (scrapy batch --processes, --scrapyd) shows them.
CREATE TABLE IF NOT EXISTS batch_rate_waits (
    batch_id  INTEGER NOT NULL REFERENCES batches (id),
    owner     TEXT NOT NULL,                     -- host:pid of the crawl
    engine    TEXT NOT NULL,
    waits     INTEGER NOT NULL,
    PRIMARY KEY (batch_id, owner, engine)
);
