-- lyra_crawl/backends/postgres/upgrade_4.sql at commit a595568: what its schema version 4 added to the one before, comments left out.
CREATE TABLE landing_pages (
    paper_id        bigint NOT NULL REFERENCES papers (id),
    url             text NOT NULL,
    outcome         text NOT NULL,
    detail          text NOT NULL DEFAULT '',
    http_status     integer,
    metadata_field  text,
    attempts        integer NOT NULL DEFAULT 1,
    fetched_at      timestamptz NOT NULL,
    PRIMARY KEY (paper_id, url)
);
