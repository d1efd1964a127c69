"""The one paper index across queries, on both store backends: a real SQLite file and a real
PostgreSQL. Each query's papers are saved as a crawl's close saves them (`save_papers`), and
read back through the protocol."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.backends.migrations import HEAD
from lyra_crawl.backends.paper_saving import StoredTitles, block_hash
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import CanonicalPaperIndex, PaperRecord
from lyra_crawl.papers.collector import QueryPapers, paper_record
from lyra_crawl.papers.paper_index import stored_block_keys
from lyra_crawl.records import PageRecord
from lyra_crawl.results import SerpResult, result_fields
from tests.backends.test_store import StoreUnderTest, postgres_store, record, sqlite_store
from tests.test_paper_index import real_dblp_acm
from training.datasets import NOISY_DEV_SET, noisy_dev_records

# The schema versions before the paper words and before blocks by hash, as the releases that
# wrote them numbered them (PostgreSQL's numbers were one behind until backends.migrations).
BEFORE_WORDS = {"sqlite": 5, "postgresql": 4}
BEFORE_HASHED_BLOCKS = {"sqlite": 6, "postgresql": 5}

HERE = Path(__file__).parent
TITLE = "Soil Moisture Sampling in Semi-Arid Catchments: A Field Trial"
MIN_ABSTRACT = 200


async def save_query(
    backends: Backends, text: str, *records: PaperRecord, task_id: str = "t1"
) -> int:
    """One query that found `records` (one result each): its page stored, its papers gathered
    and saved as its close does (papers.collector, then save_papers); returns its id."""
    store = backends.store
    query_id = await store.start_query(
        record(query_text=text, normalized_query=text, task_id=task_id)
    )
    items = []
    for n, found in enumerate(records):
        url = f"https://{text.replace(' ', '-')}.example/{n}"
        result = SerpResult(url=url, title=found.title, **result_fields(found))
        item = ResultItem.place(
            result,
            query_id=query_id,
            source=found.source,
            kind=found.kind,
            page_number=1,
            position=n + 1,
        )
        item.normalized_url, item.rank = url, n + 1
        items.append(item)
    await store.store_page(PageRecord(query_id, "mojeek", 1, "ok", len(items)), items)
    collected = QueryPapers()
    for item in items:
        collected.add(item.url, paper_record(item))
    merged = collected.merged()
    await store.save_papers(
        query_id,
        merged.papers,
        merged.fused_ranks,
        merged.attribution,
        min_abstract_chars=MIN_ABSTRACT,
    )
    return query_id


async def links(backends: Backends, query_id: int) -> list[int | None]:
    return [item.paper_id for item in await backends.store.items(query_id)]


def api(title: str = TITLE, source: str = "openalex", **fields: Any) -> PaperRecord:
    return PaperRecord(source=source, title=title, kind="api", **fields)


def serp(title: str = TITLE, **fields: Any) -> PaperRecord:
    return PaperRecord(source="mojeek", title=title, kind="serp", **fields)


def test_two_queries_finding_a_paper_with_garbled_authors_and_no_identifier_store_one_row(store):
    # The second query's record is a scholarly search engine's: no year, its title cut short
    # and lower-cased, its author line given names only, mis-encoded.
    async def work(backends: Backends):
        first = await save_query(
            backends, "soil moisture", api(year=2019, authors=("Jörg Müller", "Ana Okafor"))
        )
        second = await save_query(
            backends,
            "semi-arid catchments",
            api(
                source="semantic_scholar",
                title=TITLE.lower().removesuffix(": a field trial"),
                authors=("JÃ¶rg", "Ana"),
            ),
        )
        other = await save_query(
            backends, "grazing", api(title="Grazing Pressure and Shrub Encroachment", year=2019)
        )
        return [await links(backends, q) for q in (first, second, other)]

    first, second, other = store.run(work)

    assert first == second != other
    assert None not in first + other


def test_two_queries_finding_a_paper_by_title_and_year_alone_store_one_row(store):
    async def work(backends: Backends):
        first = await save_query(backends, "soil moisture", api(year=2019))
        second = await save_query(
            backends,
            "semi-arid catchments",
            api(source="semantic_scholar", title=TITLE.lower() + ".", year=2019),
            # The same paper as a web result, known by its title alone: no paper of its own.
            serp(title=TITLE.lower()),
        )
        # Another paper of that title, years apart: a row of its own.
        third = await save_query(backends, "field trials", api(source="crossref", year=2009))
        return (
            [await links(backends, q) for q in (first, second, third)],
            await backends.store.papers_of(first),
        )

    (first, second, third), papers = store.run(work)

    assert sorted(second, key=str) == [*first, None] and first != third
    assert None not in first + third
    (paper,) = papers
    assert paper.sources == ("openalex", "semantic_scholar") and paper.attribution == "api_only"
    assert (paper.doi, paper.arxiv_id, paper.pmid) == (None, None, None)


def test_a_paper_that_two_stored_rows_turn_out_to_be_makes_them_one(store):
    async def work(backends: Backends):
        journal = await save_query(
            backends, "journal", api(doi="10.5555/trial.1", year=2021, authors=("Ana Silva",))
        )
        # The preprint, three years earlier: the title alone does not join it to the journal.
        preprint = await save_query(
            backends, "preprint", api(source="arxiv", arxiv_id="1804.01234", year=2018)
        )
        apart = [await links(backends, q) for q in (journal, preprint)]
        both = await save_query(
            backends,
            "semantic scholar",
            api(source="semantic_scholar", doi="10.5555/trial.1", arxiv_id="1804.01234"),
        )
        # A later record of the preprint alone finds the one row through the preprint's blocks.
        later = await save_query(
            backends, "arxiv again", api(source="arxiv", arxiv_id="1804.01234")
        )
        return (
            apart,
            [await links(backends, q) for q in (journal, preprint, both, later)],
            await backends.store.papers_of(journal),
        )

    (journal_apart, preprint_apart), linked, papers = store.run(work)

    assert journal_apart != preprint_apart
    assert len({paper_id for query in linked for paper_id in query}) == 1
    (paper,) = papers
    assert paper.id == journal_apart[0], "the smaller id is kept"
    assert (paper.doi, paper.arxiv_id) == ("10.5555/trial.1", "1804.01234")


def test_evidence_is_decided_on_the_merged_paper(store):
    doi = "10.5555/trial.2"
    short, long = "A short abstract.", "A field trial of adaptive soil moisture sampling. " * 5

    async def work(backends: Backends):
        seen = []
        for text, found in (
            ("short", api(doi=doi, abstract=short)),
            ("with pdf", api(source="semantic_scholar", doi=doi, pdf_url="https://r.org/t.pdf")),
            ("long", api(source="crossref", doi=doi, abstract=long)),
        ):
            query_id = await save_query(backends, text, found)
            (paper,) = await backends.store.papers_of(query_id)
            seen.append(paper)
        return seen

    first, second, third = store.run(work)

    landing = "https://short.example/0"  # the API record's own page
    assert (first.evidence, first.fetch_url, first.evidence_reason) == (
        "fetch",
        landing,
        f"abstract shorter than {MIN_ABSTRACT} chars",
    )
    assert (second.evidence, second.fetch_url) == ("fetch", "https://r.org/t.pdf")
    assert second.fetch_urls == {
        "pdf": "https://r.org/t.pdf",
        "landing": landing,
        "doi": f"https://doi.org/{doi}",
    }
    assert (third.evidence, third.fetch_url, third.evidence_reason) == ("abstract", None, None)
    assert third.abstract == long and third.id == first.id


def test_the_stored_index_finds_the_dblp_acm_pairs_the_in_memory_index_finds(store):
    records = real_dblp_acm()
    dblp = [r for r in records if r.source == "dblp"]
    acm = [r for r in records if r.source == "acm"]

    expected, found = pairs_in_memory_and_stored(store, records, [dblp, acm])

    assert len(expected) > 2000
    assert len(found ^ expected) <= len(expected) // 500, (
        len(found - expected),
        len(expected - found),
    )


def test_the_stored_index_finds_the_noisy_pairs_the_in_memory_index_finds(store):
    # Titles with citations after them, read with the words of every stored record.
    records, labelled = noisy_dev_records(NOISY_DEV_SET)
    found = list(records.values())
    dblp = [r for r in found if r.source == "dblp"]
    acm = [r for r in found if r.source == "acm"]
    for n, one in enumerate(found):
        one.source_id = str(n)
    matches = {(records[a].source_id, records[b].source_id) for a, b, match in labelled if match}

    expected, stored = pairs_in_memory_and_stored(store, found, [dblp, acm])

    assert len(expected & matches) > 95
    # A query's records all come at once, so the store knows a few more words when it matches
    # than the in-memory index did at each record (one generic title more is read as such).
    assert len(stored ^ expected) <= 1, (stored - expected, expected - stored)


def pairs_in_memory_and_stored(
    store: StoreUnderTest, records: list[PaperRecord], queries: list[list[PaperRecord]]
) -> tuple[set[tuple[str | None, str | None]], set[tuple[str | None, str | None]]]:
    """The (DBLP id, ACM id) pairs in one paper: with every record in one index, and with each
    of `queries` saved as one query."""
    in_memory = CanonicalPaperIndex()
    keys = dict(zip(map(id, records), in_memory.add_many(records), strict=True))

    async def work(backends: Backends):
        saved = [
            await save_query(backends, f"query {n}", *found) for n, found in enumerate(queries)
        ]
        return [await links(backends, q) for q in saved]

    # Items come back by source and rank, which is the order the records were given in.
    ordered = [record for found in queries for record in found]
    stored = dict(zip(map(id, ordered), [p for q in store.run(work) for p in q], strict=True))

    def pairs(groups: dict[int, Any]) -> set[tuple[str | None, str | None]]:
        members: dict[Any, list[PaperRecord]] = {}
        for found in records:
            members.setdefault(groups[id(found)], []).append(found)
        return {
            (a.source_id, b.source_id)
            for group in members.values()
            for a in group
            if a.source == "dblp"
            for b in group
            if b.source == "acm"
        }

    return pairs(keys), pairs(stored)


@pytest.mark.parametrize("with_venue", [True, False])
def test_a_citation_after_a_stored_title_is_read_on_its_own_evidence(store, with_venue):
    # "Proceedings of the VLDB 1999" after the title is a citation by its own year, matching
    # the stored paper's: the record and the stored paper are one, whatever venues other
    # queries stored (words seen elsewhere in the index never make a merge).
    title = "Cache Conscious Indexing for Decision-Support in Main Memory"
    venue = api("Optimizing Queries over Multimedia", venue="Proceedings of the VLDB Endowment")
    cited = api(title=f"{title} - Proceedings of the VLDB 1999", source="crossref", year=1999)

    async def work(backends: Backends):
        if with_venue:
            await save_query(backends, "venue", venue)
        first = await save_query(backends, "cache", api(title=title, year=1999))
        second = await save_query(backends, "cited", cited)
        return [await links(backends, q) for q in (first, second)]

    first, second = store.run(work)

    assert first == second


# -- titles kept between saves ------------------------------------------------------------


def test_a_process_reads_titles_again_after_another_process_saved_papers(store):
    # This process keeps the stored row's titles from its own save; another process then adds
    # a title to the row (a record with its DOI); a record with that title alone, saved here
    # next, is the row: the titles kept were dropped and read again.
    title = "Grazing Pressure and Shrub Encroachment in Semi-Arid Rangelands"
    doi = "10.5555/graze.1"
    authors = ("Ana Silva",)

    async def work(backends: Backends):
        first = await save_query(backends, "moisture", api(doi=doi, year=2019, authors=authors))

        async def other_process(other: Backends) -> None:
            await save_query(other, "grazing", api(title=title, doi=doi, authors=authors))

        await with_backends(store.settings, other_process)
        again = await save_query(
            backends, "shrubs", api(title=title.lower(), source="crossref", year=2019)
        )
        return [await links(backends, q) for q in (first, again)]

    first, again = store.run(work)

    assert first == again


def test_titles_kept_hold_while_only_this_process_saves() -> None:
    titles = StoredTitles()
    titles.start(5)
    titles.read([{"id": 1, "match_titles": "soil moisture\nsoil water"}])

    titles.start(6)  # the generation this process's last save left
    assert titles.missing([1, 2]) == [2] and titles.get(1) == ("soil moisture", "soil water")
    titles.start(8)  # another process saved in between
    assert titles.missing([1, 2]) == [1, 2]
    titles.read([{"id": 1, "match_titles": "soil moisture"}])
    # A save that failed moved the store's generation on in its transaction only: the next one
    # moves it to the same number again.
    titles.start(8)
    assert titles.missing([1]) == [1]


# -- stores from before the paper index are brought to it --------------------------------


def old_paper_sql(placeholder: str) -> str:
    return (
        "INSERT INTO papers (title, normalized_title, year, authors, abstract, external_ids,"
        " attribution, sources, created_at, updated_at) VALUES"
        f" ({', '.join([placeholder] * 8)}, '2026-01-01', '2026-01-01')"
    )


OLD_PAPER = (TITLE, TITLE.lower(), 2019, '["Ana Silva"]', None, "{}", "api_only", '["openalex"]')
# Found again by a query, by title and year alone.
again = api(source="semantic_scholar", year=2019)


def test_a_sqlite_file_of_the_previous_release_gets_its_papers_indexed(tmp_path):
    store = sqlite_store(tmp_path)
    old = sqlite3.connect(tmp_path / "db.sqlite3")
    old.executescript((HERE / "schemas" / "sqlite_v1.sql").read_text())
    old.execute("INSERT INTO schema_version (version) VALUES (1)")
    old.execute(old_paper_sql("?"), OLD_PAPER)
    old.commit()
    old.close()

    query_id = store.run(lambda backends: save_query(backends, "again", again))

    (paper,) = store.run(lambda backends: backends.store.papers_of(query_id))
    assert paper.id == 1 and paper.sources == ("openalex", "semantic_scholar")
    assert (paper.evidence, paper.evidence_reason) == ("fetch", "no abstract")
    assert paper.fetch_url == "https://again.example/0", "the landing page it now has"
    upgraded = sqlite3.connect(tmp_path / "db.sqlite3")
    assert upgraded.execute("SELECT version FROM schema_version").fetchall() == [(HEAD,)]
    words = upgraded.execute("SELECT word, kind FROM paper_words").fetchall()
    assert {("ana", "name"), ("silva", "name")} <= set(words), "the old paper's author"


def test_a_postgresql_database_of_schema_1_is_upgraded_and_its_papers_indexed(
    postgres_url, tmp_path
):
    with psycopg.connect(postgres_url) as conn:
        conn.execute((HERE / "schemas" / "postgresql_v1.sql").read_text())
        conn.execute("INSERT INTO schema_version (version) VALUES (1)")
        conn.execute(old_paper_sql("%s"), OLD_PAPER)
    store = postgres_store(postgres_url, tmp_path)

    query_id = store.run(lambda backends: save_query(backends, "again", again))

    (paper,) = store.run(lambda backends: backends.store.papers_of(query_id))
    assert paper.id == 1 and paper.sources == ("openalex", "semantic_scholar")
    assert (paper.evidence, paper.evidence_reason) == ("fetch", "no abstract")
    assert paper.fetch_url == "https://again.example/0", "the landing page it now has"
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(HEAD,)]
        words = conn.execute("SELECT word, kind FROM paper_words").fetchall()
        assert {("ana", "name"), ("silva", "name")} <= set(words), "the old paper's author"


def test_a_store_from_before_the_words_gets_them_and_its_titles_normalised(store):
    # A store of the version before them: titles kept compact, no words known, blocks by text.
    # Opened again, its papers' titles are read as a save reads them and their authors' words
    # are known.
    found = api(year=2019, authors=("Ana Silva",), venue="Journal of Hydrology")
    store.run(lambda backends: save_query(backends, "moisture", found))
    previous = BEFORE_WORDS[store.name]
    compact = TITLE.lower().replace(":", "").replace("-", "").replace(" ", "")
    with raw_connection(store) as conn:
        blocks_by_text(conn)
        conn.execute(f"UPDATE papers SET match_titles = '{compact}'")
        conn.execute("DELETE FROM paper_words")
        conn.execute(f"UPDATE schema_version SET version = {previous}")
        if store.name == "postgresql":
            conn.execute("DROP TABLE paper_words, paper_index_generation")

    query_id = store.run(lambda backends: save_query(backends, "again", again))

    with raw_connection(store) as conn:
        titles = conn.execute("SELECT match_titles FROM papers").fetchall()
        words = set(conn.execute("SELECT word, kind FROM paper_words").fetchall())
    assert titles == [("soil moisture sampling in semi arid catchments a field trial",)]
    assert {("silva", "name"), ("hydrology", "venue")} <= words
    assert store.run(lambda backends: links(backends, query_id)) == [1]


def test_a_store_with_blocks_by_text_gets_them_by_hash(store):
    # A store of the previous version keyed its blocks by their text. Opened again, each block
    # is the same block by its hash (in PostgreSQL by its own md5), and a paper found again
    # by title and year alone is the stored one.
    store.run(lambda backends: save_query(backends, "moisture", api(year=2019, doi="10.1234/x")))
    with raw_connection(store) as conn:
        text_keys = blocks_by_text(conn)
        conn.execute(f"UPDATE schema_version SET version = {BEFORE_HASHED_BLOCKS[store.name]}")

    query_id = store.run(lambda backends: save_query(backends, "again", again))

    with raw_connection(store) as conn:
        hashes = conn.execute("SELECT block_hash, paper_id FROM paper_index_blocks").fetchall()
        old_table = conn.execute(
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'paper_blocks'"
            if store.name == "postgresql"
            else "SELECT COUNT(*) FROM sqlite_master WHERE name = 'paper_blocks'"
        ).fetchone()
    assert {(block_hash(key), 1) for key in text_keys} <= set(hashes)
    assert "doi:10.1234/x" in text_keys and old_table == (0,)
    assert store.run(lambda backends: links(backends, query_id)) == [1]


def blocks_by_text(conn: Any) -> set[str]:
    """Turn a store's blocks back into the previous version's, keyed by text (those of its
    papers' kept records); returns the keys."""
    placeholder = "%s" if isinstance(conn, psycopg.Connection) else "?"
    entries = [
        (key, paper_id)
        for paper_id, kept in conn.execute("SELECT id, match_records FROM papers").fetchall()
        for key in stored_block_keys(kept if isinstance(kept, list) else json.loads(kept))
    ]
    conn.execute("DROP TABLE paper_index_blocks")
    conn.execute(
        "CREATE TABLE paper_blocks (block_key text NOT NULL, paper_id bigint NOT NULL"
        " REFERENCES papers (id), PRIMARY KEY (block_key, paper_id))"
    )
    cursor = conn.cursor()
    cursor.executemany(
        f"INSERT INTO paper_blocks (block_key, paper_id) VALUES ({placeholder}, {placeholder})",
        entries,
    )
    return {key for key, _ in entries}


def raw_connection(store: StoreUnderTest) -> Any:
    """A connection of the store's own driver, committed on leaving."""
    url = store.settings["LYRA_DB_URL"]
    if store.name == "sqlite":
        return sqlite3.connect(url.removeprefix("sqlite:///"))
    return psycopg.connect(url)
