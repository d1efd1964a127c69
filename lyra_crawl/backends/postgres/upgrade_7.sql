-- lyra_crawl's PostgreSQL schema: from version 6 to version 7 (the rate-limit waits of each
-- crawl of a batch). Run by database.py under the schema's advisory lock; the table as
-- schema.sql declares it.

-- Each crawl of a batch records its rate-limit waits per engine as it runs (its stats), so
-- that progress read from the store (scrapy batch --processes, --scrapyd) shows them.
CREATE TABLE IF NOT EXISTS batch_rate_waits (
    batch_id  bigint NOT NULL REFERENCES batches (id),
    owner     text NOT NULL,                     -- host:pid of the crawl
    engine    text NOT NULL,
    waits     integer NOT NULL,
    PRIMARY KEY (batch_id, owner, engine)
);
