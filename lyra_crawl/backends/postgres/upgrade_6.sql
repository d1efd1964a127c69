-- lyra_crawl's PostgreSQL schema: from version 5 to version 6 (the paper index's blocks keyed by
-- a 64-bit hash of their key, backends.paper_saving.block_hash, rather than its text). Run by
-- database.py under the schema's advisory lock; the table as schema.sql declares it, filled
-- from the old one.

CREATE TABLE paper_index_blocks (
    block_hash   bigint NOT NULL,
    paper_id     bigint NOT NULL REFERENCES papers (id),
    PRIMARY KEY (block_hash, paper_id)
);

-- The first 8 bytes of the key's MD5, big-endian and signed, as block_hash computes them.
INSERT INTO paper_index_blocks (block_hash, paper_id)
    SELECT ('x' || left(md5(block_key), 16))::bit(64)::bigint, paper_id FROM paper_blocks
    ON CONFLICT DO NOTHING;

DROP TABLE paper_blocks;

CREATE INDEX paper_index_blocks_paper ON paper_index_blocks (paper_id);
