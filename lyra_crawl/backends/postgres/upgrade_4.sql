-- lyra_crawl's PostgreSQL schema: from version 3 to version 4 (the papers spider's landing
-- pages). Run by database.py under the schema's advisory lock; the table as schema.sql declares it.

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
