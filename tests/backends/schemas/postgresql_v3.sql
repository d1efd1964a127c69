-- lyra_crawl/backends/postgres/upgrade_3.sql at commit a595568: what its schema version 3 added to the one before, comments left out.
CREATE TABLE citations (
    citing_paper_id  bigint NOT NULL REFERENCES papers (id),
    cited_paper_id   bigint NOT NULL REFERENCES papers (id),
    source           text NOT NULL,
    fetched_at       timestamptz NOT NULL,
    UNIQUE (citing_paper_id, cited_paper_id, source)
);
CREATE INDEX citations_cited ON citations (cited_paper_id);
CREATE TABLE citation_fetches (
    query_id     bigint NOT NULL REFERENCES queries (id),
    paper_id     bigint NOT NULL REFERENCES papers (id),
    source       text NOT NULL,
    relation     text NOT NULL,
    level        integer NOT NULL,
    status       text NOT NULL,
    links        integer NOT NULL DEFAULT 0,
    detail       text NOT NULL DEFAULT '',
    fetched_at   timestamptz NOT NULL,
    PRIMARY KEY (query_id, paper_id, source, relation)
);
CREATE INDEX citation_fetches_paper ON citation_fetches (paper_id);
