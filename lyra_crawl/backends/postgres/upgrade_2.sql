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

-- Words of stored records' author names and venues (kind: name | venue): a citation around a title
-- is read with them (lyra_crawl.papers.canonical), as the in-memory index reads it with its own.
CREATE TABLE paper_words (
    word         text COLLATE "C" NOT NULL,
    kind         text NOT NULL,
    PRIMARY KEY (word, kind)
);

-- One row: moved on by every save of papers, so a process knows whether another one saved papers
-- since its own last save (backends.paper_saving.StoredTitles).
CREATE TABLE paper_index_generation (
    id           integer PRIMARY KEY CHECK (id = 1),
    generation   bigint NOT NULL
);

ALTER TABLE serp_items ADD COLUMN pdf_url text;
