-- lyra_crawl/backends/sqlite/schema.sql at commit 67192f7 (its schema version 5), what it added to the version before, comments left out.
CREATE TABLE IF NOT EXISTS landing_pages (
    paper_id        INTEGER NOT NULL REFERENCES papers (id),
    url             TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    detail          TEXT NOT NULL DEFAULT '',
    http_status     INTEGER,
    metadata_field  TEXT,
    attempts        INTEGER NOT NULL DEFAULT 1,
    fetched_at      TEXT NOT NULL,
    PRIMARY KEY (paper_id, url)
);
