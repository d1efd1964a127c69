-- lyra_crawl/backends/postgres/upgrade_7.sql at commit a595568: what its schema version 7 added to the one before, comments left out.
CREATE TABLE IF NOT EXISTS batch_rate_waits (
    batch_id  bigint NOT NULL REFERENCES batches (id),
    owner     text NOT NULL,
    engine    text NOT NULL,
    waits     integer NOT NULL,
    PRIMARY KEY (batch_id, owner, engine)
);
