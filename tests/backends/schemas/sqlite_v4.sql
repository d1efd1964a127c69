-- lyra_crawl/backends/sqlite/schema.sql at commit 389daeb (its schema version 4), what it added to the version before, comments left out.
CREATE TABLE IF NOT EXISTS citations (
    citing_paper_id  INTEGER NOT NULL REFERENCES papers (id),
    cited_paper_id   INTEGER NOT NULL REFERENCES papers (id),
    source           TEXT NOT NULL,
    fetched_at       TEXT NOT NULL,
    UNIQUE (citing_paper_id, cited_paper_id, source)
);
CREATE TABLE IF NOT EXISTS citation_fetches (
    query_id     INTEGER NOT NULL REFERENCES queries (id),
    paper_id     INTEGER NOT NULL REFERENCES papers (id),
    source       TEXT NOT NULL,
    relation     TEXT NOT NULL,
    level        INTEGER NOT NULL,
    status       TEXT NOT NULL,
    links        INTEGER NOT NULL DEFAULT 0,
    detail       TEXT NOT NULL DEFAULT '',
    fetched_at   TEXT NOT NULL,
    PRIMARY KEY (query_id, paper_id, source, relation)
);
CREATE INDEX IF NOT EXISTS citations_cited ON citations (cited_paper_id);
CREATE INDEX IF NOT EXISTS citation_fetches_paper ON citation_fetches (paper_id);
