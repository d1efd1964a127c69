-- lyra_crawl/backends/postgres/upgrade_5.sql at commit a595568: what its schema version 5 added to the one before, comments left out.
CREATE TABLE paper_words (
    word         text COLLATE "C" NOT NULL,
    kind         text NOT NULL,
    PRIMARY KEY (word, kind)
);
CREATE TABLE paper_index_generation (
    id           integer PRIMARY KEY CHECK (id = 1),
    generation   bigint NOT NULL
);
