-- lyra_crawl/backends/sqlite/schema.sql at commit a595568 (its schema version 7), what it added to the version before, comments left out.
CREATE TABLE IF NOT EXISTS paper_index_blocks (
    block_hash   INTEGER NOT NULL,
    paper_id     INTEGER NOT NULL REFERENCES papers (id),
    PRIMARY KEY (block_hash, paper_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS engine_rate_waiters (
    engine   TEXT NOT NULL,
    address  BLOB NOT NULL,
    PRIMARY KEY (engine, address)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS batch_rate_waits (
    batch_id  INTEGER NOT NULL REFERENCES batches (id),
    owner     TEXT NOT NULL,
    engine    TEXT NOT NULL,
    waits     INTEGER NOT NULL,
    PRIMARY KEY (batch_id, owner, engine)
);
DROP TABLE paper_blocks;
CREATE INDEX IF NOT EXISTS paper_index_blocks_paper ON paper_index_blocks (paper_id);
