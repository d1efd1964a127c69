-- lyra_crawl's PostgreSQL schema: from version 1 to version 2 (the paper index and evidence).
-- Run by database.py under the schema's advisory lock, before its Python step (the blocks
-- and evidence of the papers already stored).

ALTER TABLE papers
    ADD COLUMN match_records jsonb,
    ADD COLUMN match_titles text,
    ADD COLUMN fetch_urls jsonb,
    ADD COLUMN evidence text,
    ADD COLUMN fetch_url text,
    ADD COLUMN evidence_reason text;

CREATE TABLE paper_blocks (
    block_key    text COLLATE "C" NOT NULL,
    paper_id     bigint NOT NULL REFERENCES papers (id),
    PRIMARY KEY (block_key, paper_id)
);
CREATE INDEX paper_blocks_paper ON paper_blocks (paper_id);

ALTER TABLE serp_items ADD COLUMN pdf_url text;
