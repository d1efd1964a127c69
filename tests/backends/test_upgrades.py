"""Stores written by every earlier release, on both backends, opened by this one.

tests/backends/schemas/ holds each dialect's first schema (version 1) and, for each later
version, what it added to the one before, as the releases wrote them (SQLite 1-7, from the
schema file of the commit that last wrote each version; PostgreSQL 1-7 in its own numbering,
this history's 2-8, from its upgrade_<n>.sql files); and version 9's whole schema on each
dialect (the first release of the one history: what backends/tables.py compiled to for a new
store). A store of a version is made from them as that release made it (its tables, its
version), one row in every table, then opened here: every row is found again, column by column,
and through the store's own reads; the store then has the tables, columns and indexes of a store
made new here, its paper index finds the old paper, it keeps a selection's audit (version 10);
and a store newer than this code is refused.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lyra_crawl.backends import Backends
from lyra_crawl.backends.migrations import HEAD
from lyra_crawl.backends.paper_saving import block_hash
from lyra_crawl.papers.canonical import PaperRecord
from lyra_crawl.records import (
    BackendError,
    CandidateRecord,
    PageRecord,
    SelectionCorpus,
    SelectionRecord,
    StageRun,
    StageScores,
)
from tests.backends.test_store import StoreUnderTest, item, postgres_store, record, sqlite_store
from tests.backends.test_store import paper as paper_of
from tests.servers.postgres import USER

SCHEMAS = Path(__file__).parent / "schemas"
# What each release's number is in the one history.
RELEASES = (
    [("sqlite", n, n) for n in range(1, 8)]
    + [("postgresql", n, n + 1) for n in range(1, 8)]
    + [("sqlite", 9, 9), ("postgresql", 9, 9)]
)
# Releases whose schema file is whole, not what they added to the version before.
WHOLE_SCHEMAS = {9}
DOI = "10.1234/upgrade"
INSTANT = "2026-01-02T03:04:05.678+00:00"
# Values a column of that name (or table and name) takes; others by their type.
SAMPLES: dict[Any, Any] = {
    "stop_reason": '{"mojeek": "max_pages"}',
    "errors": '{"mojeek": "timeout"}',
    "selection": '{"rule": "explicit"}',
    ("queries", "attribution"): '{"both": 1}',
    "authors": '["Ana Silva"]',
    "match_records": f'[{{"title": "Soil Moisture", "year": 2019, "doi": "{DOI}"}}]',
    "external_ids": '{"openalex": "W1"}',
    "sources": '["openalex"]',
    "fetch_urls": '{"doi": "https://doi.org/10.1234/upgrade"}',
    "arguments": '{"query": "soil"}',
    "doi": DOI,
    "title": "Soil Moisture",
    "year": 2019,
    "block_key": f"doi:{DOI}",
    "block_hash": block_hash(f"doi:{DOI}"),
    ("intervention_queue", "status"): "open",
    ("queries", "status"): "finished",
    ("paper_words", "kind"): "name",
    "address": b"\0lyra-1",
}
# Parents first: rows of the others point at row 1 of these.
PARENTS = ("queries", "papers", "batches")


def sample(table: str, column: str, kind: str) -> Any:
    if (table, column) in SAMPLES:
        return SAMPLES[table, column]
    if column in SAMPLES:
        return SAMPLES[column]
    kind = kind.lower()
    if column.endswith("_at") or "timestamp" in kind:
        return INSTANT
    if "int" in kind:
        return 1
    if kind in ("real", "double precision"):
        return 0.5
    if kind == "boolean":
        return False
    if kind == "jsonb":
        return "{}"
    if kind in ("blob", "bytea"):
        return b"\0"
    return f"{column} 1"


class Old:
    """A store made by an earlier release: its raw connection, its tables' columns."""

    def __init__(self, store: StoreUnderTest, dialect: str) -> None:
        self.store = store
        self.dialect = dialect

    @contextmanager
    def connect(self) -> Iterator[Any]:
        url = self.store.settings["LYRA_DB_URL"]
        if self.dialect == "sqlite":
            with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
                yield conn
                conn.commit()
        else:
            with psycopg.connect(url) as conn:
                yield conn

    def mark(self) -> str:
        return "?" if self.dialect == "sqlite" else "%s"

    def columns(self, conn: Any) -> dict[str, list[tuple[str, str, bool]]]:
        """Each table's columns: name, type, whether the store gives it (an id)."""
        if self.dialect == "sqlite":
            names = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            return {
                name: [
                    (c[1], c[2], bool(c[5]) and c[2] == "INTEGER" and c[1] == "id")
                    for c in conn.execute(f"PRAGMA table_info({name})")
                ]
                for name in names
            }
        found: dict[str, list[tuple[str, str, bool]]] = {}
        for table, column, kind, identity in conn.execute(
            "SELECT table_name, column_name, data_type, is_identity FROM information_schema.columns"
            " WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ):
            found.setdefault(table, []).append((column, kind, identity == "YES"))
        return found

    def indexes(self, conn: Any) -> set[str]:
        if self.dialect == "sqlite":
            query = "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
        else:
            query = "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
        return {row[0] for row in conn.execute(query)}

    def rows(self, conn: Any, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
        listed = ", ".join(columns)
        return [tuple(r) for r in conn.execute(f"SELECT {listed} FROM {table} ORDER BY {listed}")]


def make(old: Old, version: int) -> dict[str, list[str]]:
    """The release's store, version `version`, one row in every table; each table's columns."""
    with old.connect() as conn:
        for step in [version] if version in WHOLE_SCHEMAS else range(1, version + 1):
            schema = (SCHEMAS / f"{old.dialect}_v{step}.sql").read_text()
            if old.dialect == "sqlite":
                conn.executescript(schema)
            else:
                conn.execute(schema)
        conn.execute(f"INSERT INTO schema_version (version) VALUES ({version})")
        tables = old.columns(conn)
        parents = [table for table in PARENTS if table in tables]
        for table in [*parents, *sorted(set(tables) - set(PARENTS) - {"schema_version"})]:
            given = [(column, kind) for column, kind, generated in tables[table] if not generated]
            marks = ", ".join(old.mark() for _ in given)
            conn.execute(
                f"INSERT INTO {table} ({', '.join(c for c, _ in given)}) VALUES ({marks})",
                [sample(table, column, kind) for column, kind in given],
            )
    return {table: [column for column, _, _ in columns] for table, columns in tables.items()}


def shape(old: Old) -> tuple[dict[str, list[tuple[str, str]]], set[str]]:
    """A store's tables with their columns (name, type), and its indexes."""
    with old.connect() as conn:
        columns = {
            table: sorted((name, kind.lower()) for name, kind, _ in found)
            for table, found in old.columns(conn).items()
        }
        return columns, old.indexes(conn)


@pytest.fixture
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A store made new here, of a dialect (PostgreSQL: a database of its own)."""

    def made(dialect: str) -> Old:
        if dialect == "sqlite":
            (tmp_path / "new").mkdir()
            store = sqlite_store(tmp_path / "new")
        else:
            server = request.getfixturevalue("postgres_server")
            name = f"lyra_test_{os.getpid()}_new"
            with server.admin() as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                admin.execute(f"CREATE DATABASE {name} OWNER {USER}")
            store = postgres_store(server.url(name), tmp_path / "new")
        store.run(lambda backends: backends.store.query_ids())
        return Old(store, dialect)

    return made


@pytest.fixture
def old_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    def made(dialect: str) -> Old:
        if dialect == "sqlite":
            (tmp_path / "old").mkdir()
            return Old(sqlite_store(tmp_path / "old"), dialect)
        return Old(postgres_store(request.getfixturevalue("postgres_url"), tmp_path), dialect)

    return made


async def read_back(backends: Backends) -> dict[str, Any]:
    """The release's rows through the store's reads."""
    found = backends.store
    query = await found.query(1)
    assert query is not None
    batch = await found.batch(1)
    return {
        "query": (query.query_text, query.status, query.stop_reason, query.selection),
        "pages": [(p.source, p.page_number, p.results) for p in await found.pages(1)],
        "items": [(i.normalized_url, i.paper_id, i.authors) for i in await found.items(1)],
        "papers": [(p.id, p.doi, p.authors) for p in await found.papers_of(1)],
        "interventions": [i.id for i in await found.open_interventions()],
        "batch": None if batch is None else (batch.entries, await found.batch_entries(1)),
    }


async def keep_a_selection(backends: Backends) -> bool:
    """Whether a selection of the release's paper is read back as it was recorded."""
    chosen = SelectionRecord(
        question="soil moisture",
        conversation=None,
        search_text="soil moisture",
        facets_named=(),
        facets_carried=(),
        facet_note="",
        documents_kept=1,
        documents_total=1,
        stages=(StageRun("keyword", True, "1 document", "bm25s"),),
        candidates=(CandidateRecord("paper:1", 0, StageScores(keyword=2.0), 1, 1),),
        reason="",
        corpus=SelectionCorpus(whole_store=True),
        corpus_version="v",
        selected_at=INSTANT,
    )
    found = await backends.store.selection(await backends.store.record_selection(chosen))
    return found is not None and replace(found, id=None) == chosen


async def find_the_paper_again(backends: Backends) -> list[int]:
    """A new query's paper with the release's paper's DOI: the rows it is linked to."""
    found = backends.store
    query_id = await found.start_query(record(task_id="again"))
    await found.store_page(
        PageRecord(query_id, "openalex", 1, "ok", 1),
        [item(query_id, 1, "https://again/", source="openalex", kind="api", doi=DOI)],
    )
    paper = paper_of(
        9,
        doi=DOI,
        title="Soil Moisture",
        records=[PaperRecord(source="openalex", title="Soil Moisture", doi=DOI)],
    )
    await found.save_papers(
        query_id, [(paper, ["https://again/"])], {}, {"api_only": 1}, min_abstract_chars=10
    )
    return [p.id for p in await found.papers_of(query_id)]


@pytest.mark.parametrize(
    ("dialect", "version", "unified"),
    [pytest.param(d, n, unified, id=f"{d}-{n}") for d, n, unified in RELEASES],
)
def test_a_store_of_every_earlier_release_opens_with_every_row(
    old_store, new_store, dialect, version, unified
):
    old = old_store(dialect)
    columns = make(old, version)
    # What an upgrade rewrites on purpose: titles kept normalised (6), blocks by hash (7).
    rewritten = {("papers", "match_titles")} if unified < 6 else set()
    compared = {
        table: [c for c in names if (table, c) not in rewritten]
        for table, names in columns.items()
        if table not in ("schema_version", "paper_blocks")
    }
    with old.connect() as conn:
        before = {table: old.rows(conn, table, names) for table, names in compared.items()}

    reads = old.store.run(read_back)

    with old.connect() as conn:
        after = {table: old.rows(conn, table, names) for table, names in compared.items()}
        hashed = old.rows(conn, "paper_index_blocks", ["block_hash", "paper_id"])
        versions = conn.execute("SELECT version FROM schema_version").fetchall()
    assert after == before, "every row of every table, column by column"
    assert all(len(rows) == 1 for rows in after.values())
    if "paper_blocks" in columns or "paper_index_blocks" in columns or unified < 3:
        assert (block_hash(f"doi:{DOI}"), 1) in hashed
    assert versions == [(HEAD,)]
    assert reads["query"] == (
        "query_text 1",
        "finished",
        {"mojeek": "max_pages"},
        {"rule": "explicit"},
    )
    assert reads["pages"] == [("source 1", 1, 1)]
    assert reads["items"] == [("normalized_url 1", 1, ("Ana Silva",) if unified >= 2 else ())]
    assert reads["papers"] == [(1, DOI, ("Ana Silva",))]
    assert reads["interventions"] == [1]
    if "batches" in columns:
        entries, (entry,) = reads["batch"]
        assert (entries, entry.id, entry.arguments) == (1, 1, {"query": "soil"})
    assert shape(old) == shape(new_store(dialect)), "the tables, columns and indexes of a new store"
    assert old.store.run(keep_a_selection), "a selection recorded and read back whole"
    assert old.store.run(find_the_paper_again) == [1], "the release's paper, found by the index"


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_store_newer_than_this_code_is_refused_naming_its_version(old_store, dialect):
    old = old_store(dialect)
    old.store.run(lambda backends: backends.store.query_ids())
    with old.connect() as conn:
        conn.execute(f"UPDATE schema_version SET version = {HEAD + 1}")

    with pytest.raises(BackendError) as raised:
        old.store.run(lambda backends: backends.store.query_ids())

    assert f"holds lyra schema version {HEAD + 1}, this lyra_crawl knows version {HEAD}" in str(
        raised.value
    )
    assert "use the lyra_crawl release that made it" in str(raised.value)
