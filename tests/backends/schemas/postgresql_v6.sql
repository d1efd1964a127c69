-- lyra_crawl/backends/postgres/upgrade_6.sql at commit a595568: what its schema version 6 added to the one before, comments left out.
CREATE TABLE paper_index_blocks (
    block_hash   bigint NOT NULL,
    paper_id     bigint NOT NULL REFERENCES papers (id),
    PRIMARY KEY (block_hash, paper_id)
);
INSERT INTO paper_index_blocks (block_hash, paper_id)
    SELECT ('x' || left(md5(block_key), 16))::bit(64)::bigint, paper_id FROM paper_blocks
    ON CONFLICT DO NOTHING;
DROP TABLE paper_blocks;
CREATE INDEX paper_index_blocks_paper ON paper_index_blocks (paper_id);
