"""One schema history for both SQL dialects: the same version number is the same change.

`HISTORY` lists every version in order, what it changed, the tables (as backends.tables
declares them) and columns it added, and what it did to the rows already stored. A store is
brought to the newest version when it is opened (`upgrade`, a plan either backend runs in one
transaction: SQLite under its write lock, PostgreSQL under the schema's advisory lock, so
processes opening it at once upgrade it once):

- a new store gets every table as declared now, at the newest version;
- an older one gets, version after version, the tables it lacks (created as declared now) and
  the columns (version 1: the columns of its tables that no later version added, for files
  made before versions were kept), then that version's change to its rows; the indexes
  declared now come last;
- a store newer than this code is refused, naming the version and the fix.

PostgreSQL numbered its versions apart until version 9 (its 1-7 are this history's 2-8: it
began with batches); a PostgreSQL store stamped 1-7 is read so. SQLite's numbers were this
history's already.

A minimal runner rather than Alembic: Alembic runs migrations through a SQLAlchemy engine that
owns the connection and its transactions, while SQLite's connection belongs to its worker thread
(BEGIN IMMEDIATE under the file's flock) and PostgreSQL's to psycopg's async pool; its scripts
would also have to ship in the Scrapyd egg. The versions here compile from the same MetaData.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateColumn, CreateIndex, CreateTable, ExecutableDDLElement

from lyra_crawl.backends import paper_saving, tables
from lyra_crawl.backends import statements as sql
from lyra_crawl.backends.dialects import (
    POSTGRESQL,
    Plan,
    Statement,
    named,
    run,
    run_many,
    tuples,
    value,
)
from lyra_crawl.backends.rows import json_text
from lyra_crawl.records import BackendError

# The tables of a store, the columns of a table.
TABLES = Statement.per_dialect(
    sqlite="SELECT name FROM sqlite_master WHERE type = 'table'",
    postgresql="SELECT table_name FROM information_schema.tables"
    " WHERE table_schema = current_schema()",
)
COLUMNS = Statement.per_dialect(
    sqlite="SELECT name FROM pragma_table_info(:table)",
    postgresql="SELECT column_name FROM information_schema.columns"
    " WHERE table_schema = current_schema() AND table_name = :table",
)
# PostgreSQL: nodes opening a database at once apply its schema once ("lyra" in ASCII).
SCHEMA_LOCK = Statement.per_dialect(
    sqlite=None, postgresql=f"SELECT pg_advisory_xact_lock({0x6C797261})"
)
STORED_VERSION = Statement("SELECT MAX(version) FROM schema_version")
FORGET_VERSION = Statement("DELETE FROM schema_version")
STAMP_VERSION = Statement("INSERT INTO schema_version (version) VALUES (:version)")
TEXT_BLOCKS = Statement("SELECT block_key, paper_id FROM paper_blocks")
DROP_TEXT_BLOCKS = Statement("DROP TABLE paper_blocks")


class _AddColumn(ExecutableDDLElement):
    """ALTER TABLE … ADD COLUMN, the column as declared now."""

    def __init__(self, column: Column) -> None:
        self.column = column


@compiles(_AddColumn)
def _compile_add_column(element: _AddColumn, compiler: Any, **kw: Any) -> str:
    declared = compiler.process(CreateColumn(element.column), **kw)
    return f"ALTER TABLE {element.column.table.name} ADD COLUMN {declared}"


_TABLES = tables.metadata.tables
_CREATE = {
    name: Statement(CreateTable(table, if_not_exists=True)) for name, table in _TABLES.items()
}
_INDEXES = {
    name: [Statement(CreateIndex(index, if_not_exists=True)) for index in table.indexes]
    for name, table in _TABLES.items()
}
_ADD = {
    (name, column.name): Statement(_AddColumn(column))
    for name, table in _TABLES.items()
    for column in table.c
}


# -- what versions do to the rows already stored ----------------------------------------------

Present = set[str]


def _index_stored_papers(present: Present) -> Plan[None]:
    """Papers stored before the paper index get its blocks, the records kept for matching and
    their evidence."""
    upgrade = paper_saving.upgrade_to_index((yield named(sql.ALL_PAPERS)))
    yield run_many(
        sql.ENTER_BLOCK,
        [
            {"block_hash": paper_saving.block_hash(key), "paper_id": paper_id}
            for key, paper_id in upgrade.blocks
        ],
    )
    yield run_many(
        sql.UPGRADE_PAPER,
        [
            {**_encoded(values, paper_saving.UPGRADED_COLUMNS), "paper_id": paper_id}
            for paper_id, values in upgrade.rows
        ],
    )


def _know_stored_words(present: Present) -> Plan[None]:
    """Stored papers' author and venue words, and their kept titles normalised (what a save
    reads first of its candidates)."""
    upgrade = paper_saving.upgrade_matching((yield named(sql.ALL_PAPERS)))
    yield run_many(sql.KNOW_WORD, [{"word": w, "kind": kind} for w, kind in upgrade.words])
    yield run_many(
        sql.MATCH_TITLES, [{"titles": titles, "paper_id": p} for titles, p in upgrade.titles]
    )


def _hash_text_blocks(present: Present) -> Plan[None]:
    """Blocks kept by the text of their key (`paper_blocks`, versions 3-6) by its hash."""
    if "paper_blocks" not in present:
        return
    found = yield tuples(TEXT_BLOCKS)
    yield run_many(
        sql.ENTER_BLOCK,
        [{"block_hash": paper_saving.block_hash(key), "paper_id": paper} for key, paper in found],
    )
    yield run(DROP_TEXT_BLOCKS)


def _encoded(values: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    json_columns = paper_saving.PAPER_JSON_COLUMNS
    return {c: json_text(values[c]) if c in json_columns else values[c] for c in columns}


# -- the history ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Version:
    number: int
    change: str
    tables: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    rows: Callable[[Present], Plan[None]] | None = None


HISTORY = (
    Version(
        1,
        "queries, their pages and items, papers, interventions, the search cache; the"
        " coordination of one machine (quotas, send slots, breakers)",
        (
            *("queries", "serp_pages", "serp_items", "papers", "intervention_queue"),
            *("serp_cache", "engine_usage", "engine_rate", "engine_health"),
        ),
    ),
    Version(
        2,
        "batches and their entries; every field of a result; the send slot's holder",
        ("batches", "batch_entries"),
        (
            ("queries", "batch_entry_id"),
            *(
                ("serp_items", column)
                for column in ("kind", "position", "authors", "year", "venue", "abstract")
            ),
            ("serp_items", "source_id"),
            ("engine_rate", "held"),
        ),
    ),
    Version(
        3,
        "the paper index: blocks, the records kept for matching, every paper's evidence",
        ("paper_index_blocks",),
        (
            *(("papers", column) for column in paper_saving.UPGRADED_COLUMNS),
            ("serp_items", "pdf_url"),
        ),
        _index_stored_papers,
    ),
    Version(4, "the citation graph", ("citations", "citation_fetches")),
    Version(5, "the papers spider's landing pages", ("landing_pages",)),
    Version(
        6,
        "the author and venue words of stored records; the paper index's generation",
        ("paper_words", "paper_index_generation"),
        rows=_know_stored_words,
    ),
    Version(
        7, "blocks kept by the hash of their key", ("paper_index_blocks",), rows=_hash_text_blocks
    ),
    Version(
        8,
        "each batch crawl's rate-limit waits; the processes waiting for a send slot",
        ("batch_rate_waits", "engine_rate_waiters"),
    ),
    Version(9, "one history for both dialects: every query's host", columns=(("queries", "host"),)),
    Version(
        10,
        "each selection scrapy select made, with its candidates' scores (the audit)",
        ("selections", "selection_candidates"),
    ),
)
HEAD = HISTORY[-1].number
_POSTGRESQL_BEFORE = {number: number + 1 for number in range(1, 8)}
_LATER_COLUMNS = {column for version in HISTORY for column in version.columns}


def upgrade(dialect: str, where: str) -> Plan[int]:
    """Bring the store to HEAD; the version it was at (0: new). `where` names the store in the
    message that refuses a newer one."""
    yield run(SCHEMA_LOCK)
    present = {row[0] for row in (yield tuples(TABLES))}
    names = [table.name for table in tables.tables_of(dialect)]
    if "queries" not in present:
        for table in names:
            yield run(_CREATE[table])
        yield from _indexes(names)
        yield from _stamp(HEAD)
        return 0
    found = (yield value(STORED_VERSION)) if "schema_version" in present else None
    version = found or 1
    if dialect == POSTGRESQL and found in _POSTGRESQL_BEFORE:
        version = _POSTGRESQL_BEFORE[found]
    if version > HEAD:
        raise BackendError(
            f"{where} holds lyra schema version {version}, this lyra_crawl knows version {HEAD}:"
            " use the lyra_crawl release that made it, or another database"
        )
    if version == HEAD and found is not None:
        return version
    for step in HISTORY[version - 1 if found is None else version :]:
        for table in step.tables:
            if table in names:
                yield run(_CREATE[table])
        columns = step.columns
        if step.number == 1:
            columns = tuple(
                (table, column.name)
                for table in step.tables
                if table in names
                for column in _TABLES[table].c
                if (table, column.name) not in _LATER_COLUMNS
            )
        yield from _add_missing(columns, names)
        if step.rows is not None:
            yield from step.rows(present)
    yield from _indexes(names)
    yield from _stamp(HEAD)
    return version


def _add_missing(columns: tuple[tuple[str, str], ...], names: list[str]) -> Plan[None]:
    """The columns a store's tables lack."""
    by_table: dict[str, list[str]] = {}
    for table, column in columns:
        if table in names:
            by_table.setdefault(table, []).append(column)
    for table, wanted in by_table.items():
        have = {row[0] for row in (yield tuples(COLUMNS, table=table))}
        for column in wanted:
            if column not in have:
                yield run(_ADD[table, column])


def _indexes(names: list[str]) -> Plan[None]:
    for table in names:
        for index in _INDEXES[table]:
            yield run(index)


def _stamp(version: int) -> Plan[None]:
    yield run(_CREATE["schema_version"])
    yield run(FORGET_VERSION)
    yield run(STAMP_VERSION, version=version)
