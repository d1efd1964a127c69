-- lyra_crawl's PostgreSQL schema: from version 4 to version 5 (what a save of papers reads with
-- the paper index: the words of stored records, its generation). Run by database.py under the
-- schema's advisory lock, before its Python step (the words and normalised titles of the papers
-- already stored).

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
