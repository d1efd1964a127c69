-- lyra_crawl/backends/sqlite/schema.sql at commit b770d0c (its schema version 3), what it added to the version before, comments left out.
ALTER TABLE serp_items ADD COLUMN pdf_url TEXT;
ALTER TABLE papers ADD COLUMN match_records TEXT;
ALTER TABLE papers ADD COLUMN match_titles TEXT;
ALTER TABLE papers ADD COLUMN fetch_urls TEXT;
ALTER TABLE papers ADD COLUMN evidence TEXT;
ALTER TABLE papers ADD COLUMN fetch_url TEXT;
ALTER TABLE papers ADD COLUMN evidence_reason TEXT;
CREATE TABLE IF NOT EXISTS paper_blocks (
    block_key    TEXT NOT NULL,
    paper_id     INTEGER NOT NULL REFERENCES papers (id),
    PRIMARY KEY (block_key, paper_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS queries_batch_entry ON queries (batch_entry_id);
CREATE INDEX IF NOT EXISTS serp_items_paper ON serp_items (paper_id);
CREATE INDEX IF NOT EXISTS paper_blocks_paper ON paper_blocks (paper_id);
CREATE INDEX IF NOT EXISTS intervention_queue_query ON intervention_queue (query_id);
