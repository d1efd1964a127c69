-- lyra_crawl/storage/schema.sql at commit 90f511c (schema version 1: before batches, item fields and the rate slot's `held`), comments left out.
CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER NOT NULL
);
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
    status           TEXT NOT NULL DEFAULT 'running',
    stop_reason      TEXT,
    pages_fetched    INTEGER NOT NULL DEFAULT 0,
    items            INTEGER NOT NULL DEFAULT 0,
    harvest_rate     REAL,
    selection        TEXT,
    errors           TEXT,
    attribution      TEXT,
    cache_hit        INTEGER NOT NULL DEFAULT 0,
    cached_from      INTEGER,
    job_id           TEXT,
    pid              INTEGER,
    started_at       TEXT NOT NULL,
    finished_at      TEXT
);
CREATE INDEX IF NOT EXISTS queries_normalized ON queries (normalized_query);
CREATE INDEX IF NOT EXISTS queries_task ON queries (task_id);
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
CREATE TABLE IF NOT EXISTS serp_items (
    id              INTEGER PRIMARY KEY,
    query_id        INTEGER NOT NULL REFERENCES queries (id),
    source          TEXT NOT NULL,
    engine          TEXT NOT NULL,
    rank            INTEGER NOT NULL,
    page_number     INTEGER NOT NULL,
    url             TEXT NOT NULL,
    normalized_url  TEXT NOT NULL,
    title           TEXT NOT NULL,
    snippet         TEXT,
    date            TEXT,
    doi             TEXT,
    arxiv_id        TEXT,
    pmid            TEXT,
    relevance       REAL,
    fused_rank      INTEGER,
    paper_id        INTEGER REFERENCES papers (id),
    fetched_at      TEXT NOT NULL,
    UNIQUE (query_id, normalized_url)
);
CREATE INDEX IF NOT EXISTS serp_items_normalized_url ON serp_items (normalized_url);
CREATE INDEX IF NOT EXISTS serp_items_doi ON serp_items (doi);
CREATE TABLE IF NOT EXISTS papers (
    id               INTEGER PRIMARY KEY,
    doi              TEXT UNIQUE,
    arxiv_id         TEXT,
    pmid             TEXT,
    title            TEXT NOT NULL,
    normalized_title TEXT NOT NULL,
    year             INTEGER,
    authors          TEXT,
    venue            TEXT,
    abstract         TEXT,
    external_ids     TEXT,
    attribution      TEXT,
    sources          TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS papers_arxiv ON papers (arxiv_id);
CREATE INDEX IF NOT EXISTS papers_pmid ON papers (pmid);
CREATE TABLE IF NOT EXISTS engine_usage (
    engine       TEXT NOT NULL,
    date         TEXT NOT NULL,
    usage_count  INTEGER NOT NULL DEFAULT 0,
    UNIQUE (engine, date)
);
CREATE TABLE IF NOT EXISTS engine_rate (
    engine        TEXT PRIMARY KEY,
    next_allowed  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS engine_health (
    engine                TEXT PRIMARY KEY,
    state                 TEXT NOT NULL DEFAULT 'closed',
    open_until            REAL,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    trips                 INTEGER NOT NULL DEFAULT 0,
    last_reason           TEXT,
    trial_owner           TEXT,
    updated_at            TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS intervention_queue (
    id           INTEGER PRIMARY KEY,
    engine       TEXT NOT NULL,
    url          TEXT NOT NULL,
    query_id     INTEGER REFERENCES queries (id),
    kind         TEXT NOT NULL,
    detail       TEXT,
    status       TEXT NOT NULL DEFAULT 'open',
    created_at   TEXT NOT NULL,
    resolved_at  TEXT
);
CREATE TABLE IF NOT EXISTS serp_cache (
    cache_key    TEXT PRIMARY KEY,
    query_id     INTEGER NOT NULL REFERENCES queries (id),
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
