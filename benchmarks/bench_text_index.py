"""Benchmark: a save's candidates by the store's hashed blocks against the databases' own text
indexes, SQLite's FTS5 and PostgreSQL's pg_trgm (why `papers.paper_index` keeps blocks).

Run as ``python -m benchmarks text_index``. The titles of the canonical benchmark's first
70,000 synthetic records (``bench_canonical.synthetic_records``, normalised) are stored, and
the next ``QUERY_TITLES`` are a query's papers asking for candidates, in one statement each way
(wall milliseconds per query title, ``candidates_ms_per_title.<way>``):

* ``blocks``: the store's way, every word and edge key of the titles looked up by its 64-bit
  hash in a table like ``paper_index_blocks`` (``backends.paper_saving.block_hash``);
* ``fts5_trigram``, ``fts5_words``: an FTS5 table of the titles with the trigram tokenizer, and
  with word tokens (unicode61); each word key of the titles asked as its words AND-ed, at most
  ``BLOCK_LIMIT + 1`` rows (a full block is not read);
* ``pg_trgm_similarity``: ``title % query`` over a GIN ``gin_trgm_ops`` index at pg_trgm's
  default threshold (0.3 similarity) raised to 0.5, one join for all query titles;
* ``pg_trgm_like``: each word key as ``LIKE '%w1%' AND LIKE '%w2%'`` over the same index.
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
import tempfile
import time
from collections.abc import Callable

from benchmarks.bench_canonical import SEED, synthetic_records
from lyra_crawl.backends.paper_saving import block_hash
from lyra_crawl.papers.blocking import BLOCK_LIMIT, title_block_keys
from lyra_crawl.papers.title_normalization import normalize_title
from tests.servers.postgres import running_postgres

STORED_TITLES = 70_000
QUERY_TITLES = 200
_SIMILARITY = 0.5


def run(shared_dir: pathlib.Path) -> dict[str, float]:
    records, _ = synthetic_records(100_000, seed=SEED)
    titles = [normalize_title(record.title) for record in records]
    stored = titles[:STORED_TITLES]
    asked = titles[STORED_TITLES : STORED_TITLES + QUERY_TITLES]
    word_keys = sorted({key for title in asked for key in title_block_keys(title)[0]})
    # Words of three characters at least: a trigram index finds nothing shorter.
    long_keys = [key.split() for key in word_keys if min(map(len, key.split())) >= 3]
    timed: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        conn = sqlite3.connect(pathlib.Path(folder) / "text_index.sqlite3")
        timed["blocks"] = _blocks(conn, stored, asked)
        for way, tokenizer in (("fts5_trigram", "trigram"), ("fts5_words", "unicode61")):
            timed[way] = _fts5(conn, way, tokenizer, stored, long_keys)
        conn.close()
    timed |= _pg_trgm(stored, asked, long_keys)
    return {f"candidates_ms_per_title.{way}": 1000 * s / QUERY_TITLES for way, s in timed.items()}


def _seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _blocks(conn: sqlite3.Connection, stored: list[str], asked: list[str]) -> float:
    conn.execute(
        "CREATE TABLE blocks (block_hash INTEGER, paper_id INTEGER,"
        " PRIMARY KEY (block_hash, paper_id)) WITHOUT ROWID"
    )
    rows = {
        (block_hash(key), paper_id)
        for paper_id, title in enumerate(stored, 1)
        for keys in title_block_keys(title)
        for key in keys
    }
    conn.executemany("INSERT INTO blocks VALUES (?, ?)", sorted(rows))
    conn.commit()
    hashes = sorted(
        {block_hash(k) for title in asked for keys in title_block_keys(title) for k in keys}
    )
    return _seconds(
        lambda: conn.execute(
            "SELECT block_hash, CASE WHEN COUNT(*) < ? THEN json_group_array(paper_id) END"
            " FROM blocks WHERE block_hash IN (SELECT value FROM json_each(?))"
            " GROUP BY block_hash",
            (BLOCK_LIMIT, json.dumps(hashes)),
        ).fetchall()
    )


def _fts5(
    conn: sqlite3.Connection,
    table: str,
    tokenizer: str,
    stored: list[str],
    keys: list[list[str]],
) -> float:
    conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(titles, tokenize='{tokenizer}')")
    conn.executemany(f"INSERT INTO {table} (rowid, titles) VALUES (?, ?)", enumerate(stored, 1))
    conn.commit()
    queries = [" AND ".join(f'"{word}"' for word in key) for key in keys]
    return _seconds(
        lambda: conn.execute(
            "SELECT key.value, (SELECT json_group_array(rowid) FROM"
            f" (SELECT rowid FROM {table} WHERE {table} MATCH key.value LIMIT ?))"
            " FROM json_each(?) AS key",
            (BLOCK_LIMIT + 1, json.dumps(queries)),
        ).fetchall()
    )


def _pg_trgm(stored: list[str], asked: list[str], keys: list[list[str]]) -> dict[str, float]:
    with running_postgres() as server, server.admin() as conn:
        conn.autocommit = True
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        conn.execute("CREATE TABLE titles (id bigint PRIMARY KEY, title text NOT NULL)")
        with conn.cursor() as cursor, cursor.copy("COPY titles (id, title) FROM STDIN") as copy:
            for paper_id, title in enumerate(stored, 1):
                copy.write_row((paper_id, title))
        conn.execute("CREATE INDEX titles_trgm ON titles USING gin (title gin_trgm_ops)")
        conn.execute("ANALYZE titles")
        conn.execute(f"SET pg_trgm.similarity_threshold = {_SIMILARITY}")
        pairs = [key for key in keys if len(key) == 2]
        return {
            "pg_trgm_similarity": _seconds(
                lambda: conn.execute(
                    "SELECT asked.n, titles.id FROM unnest(%s::text[]) WITH ORDINALITY"
                    " AS asked (title, n) JOIN titles ON titles.title %% asked.title",
                    (asked,),
                ).fetchall()
            ),
            "pg_trgm_like": _seconds(
                lambda: conn.execute(
                    "SELECT key.a, key.b, ARRAY(SELECT id FROM titles WHERE title LIKE key.a"
                    " AND title LIKE key.b ORDER BY id LIMIT %s)"
                    " FROM unnest(%s::text[], %s::text[]) AS key (a, b)",
                    (
                        BLOCK_LIMIT + 1,
                        [f"%{a}%" for a, _ in pairs],
                        [f"%{b}%" for _, b in pairs],
                    ),
                ).fetchall()
            ),
        }
