"""Concurrent writers: four `scrapy crawl` processes on one SQLite file, ten rounds in a row.

Each process crawls its own query from the same engine, so they also share that engine's quota,
pace and breaker rows. Nothing may fail on the lock, and every query must hold exactly the
distinct results the simulator served it.
"""

from __future__ import annotations

import pytest

from lyra_crawl.engines.urls import normalize_url
from lyra_crawl.simulator.corpus import CorpusShape, page_results
from tests.conftest import query_db, scrapy_env, start_scrapy

PROCESSES = 4
ROUNDS = 10
PAGES = 2
PER_PAGE = 10  # mojeek's page size, in the simulator as on the real engine
OVERLAP = 0.3


def served_urls(query: str) -> set[str]:
    """The distinct normalized URLs the simulator serves `query` on pages 1..PAGES."""
    shape = CorpusShape(overlap=OVERLAP)
    return {
        normalize_url(result.url)
        for page in range(1, PAGES + 1)
        for result in page_results(query, page, PER_PAGE, shape)
    }


@pytest.mark.long
@pytest.mark.e2e
def test_four_processes_write_one_database_ten_times_over(start_simulator, db_path):
    simulator = start_simulator("--overlap", str(OVERLAP))
    env = scrapy_env(simulator, db_path)
    queries = []
    for round_number in range(ROUNDS):
        batch = [f"concurrent writers {round_number} {n}" for n in range(PROCESSES)]
        processes = [
            start_scrapy(
                *("crawl", "serp", "-a", f"query={query}", "-a", "engine=mojeek"),
                *("-a", f"serp_max_pages={PAGES}", "-a", "cache=off", "-a", "sources=serp"),
                env=env,
            )
            for query in batch
        ]
        for process in processes:
            _, stderr = process.communicate(timeout=120)
            assert process.returncode == 0, stderr[-3000:]
            assert "database is locked" not in stderr and "Traceback" not in stderr, stderr
        queries += batch

    rows = query_db(db_path, "SELECT id, query_text, status, items FROM queries ORDER BY id")
    assert sorted(row["query_text"] for row in rows) == sorted(queries)
    assert {row["status"] for row in rows} == {"finished"}
    for row in rows:
        stored = query_db(
            db_path, "SELECT normalized_url FROM serp_items WHERE query_id = ?", (row["id"],)
        )
        assert {item[0] for item in stored} == served_urls(row["query_text"])
        assert row["items"] == len(stored)
    assert query_db(db_path, "PRAGMA integrity_check")[0][0] == "ok"
    (usage,) = query_db(db_path, "SELECT usage_count FROM engine_usage WHERE engine = 'mojeek'")
    assert usage[0] == len(simulator.requests("mojeek")) == PROCESSES * ROUNDS * PAGES
