-- lyra_crawl/backends/sqlite/schema.sql at commit d857212 (its schema version 6), what it added to the version before, comments left out.
CREATE TABLE IF NOT EXISTS paper_words (
    word         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    PRIMARY KEY (word, kind)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS paper_index_generation (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    generation   INTEGER NOT NULL
);
