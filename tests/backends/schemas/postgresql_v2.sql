-- lyra_crawl/backends/postgres/upgrade_2.sql at commit a595568: what its schema version 2 added to the one before, comments left out.
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
