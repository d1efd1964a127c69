-- lyra_crawl/backends/sqlite/schema.sql at commit 02136df (its schema version 2), what it added to the version before, comments left out.
ALTER TABLE queries ADD COLUMN batch_entry_id INTEGER;
ALTER TABLE serp_items ADD COLUMN kind TEXT NOT NULL DEFAULT 'serp';
ALTER TABLE serp_items ADD COLUMN position INTEGER;
ALTER TABLE serp_items ADD COLUMN authors TEXT;
ALTER TABLE serp_items ADD COLUMN year INTEGER;
ALTER TABLE serp_items ADD COLUMN venue TEXT;
ALTER TABLE serp_items ADD COLUMN abstract TEXT;
ALTER TABLE serp_items ADD COLUMN source_id TEXT;
ALTER TABLE engine_rate ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS batches (
    id            INTEGER PRIMARY KEY,
    source        TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_entries (
    id            INTEGER PRIMARY KEY,
    batch_id      INTEGER NOT NULL REFERENCES batches (id),
    position      INTEGER NOT NULL,
    query_text    TEXT NOT NULL,
    arguments     TEXT NOT NULL,
    state         TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    query_id      INTEGER REFERENCES queries (id),
    engine        TEXT,
    detail        TEXT NOT NULL DEFAULT '',
    lease_owner   TEXT,
    lease_until   REAL,
    started_at    TEXT,
    finished_at   TEXT,
    UNIQUE (batch_id, position)
);
CREATE INDEX IF NOT EXISTS batches_hash ON batches (content_hash);
CREATE INDEX IF NOT EXISTS batch_entries_state ON batch_entries (batch_id, state, position);
