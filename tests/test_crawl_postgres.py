"""The core crawl with its results in PostgreSQL: the same crawl stores the same records as on
SQLite, read back through the ResultStore protocol."""

from __future__ import annotations

from typing import Any

import pytest_twisted

from lyra_crawl.backends import Backends
from tests.backends.test_store import (
    StoreUnderTest,
    postgres_store,
    sqlite_store,
    without_instants,
)
from tests.conftest import run_crawl

CRAWL = {
    "query": "soil carbon",
    "engine": "mojeek",
    "serp_max_pages": 2,
    "sources": "serp,semantic_scholar,openalex",
    "strategy": "fixed",
}


async def stored(backends: Backends) -> dict[str, Any]:
    store = backends.store
    (query_id,) = await store.query_ids()
    return {
        "query": await store.query(query_id),
        "pages": await store.pages(query_id),
        "items": await store.items(query_id),
        "papers": await store.papers_of(query_id),
        "attribution": await store.attribution_counts(query_id),
    }


async def crawl_into(store: StoreUnderTest, simulator: Any, tmp_path: Any) -> dict[str, Any]:
    # LYRA_DB_PATH (set by the crawl settings) is emptied: LYRA_DB_URL names the store.
    await run_crawl(
        simulator, tmp_path / "unused.sqlite3", {"LYRA_DB_PATH": "", **store.settings}, **CRAWL
    )
    return without_instants(store.run(stored))


@pytest_twisted.ensureDeferred
async def test_a_crawl_on_postgresql_stores_what_the_same_crawl_stores_on_sqlite(
    start_simulator, tmp_path, postgres_url
):
    simulator = start_simulator("--results-total", "300")
    (tmp_path / "sqlite").mkdir()
    (tmp_path / "postgresql").mkdir()

    on_sqlite = await crawl_into(sqlite_store(tmp_path / "sqlite"), simulator, tmp_path)
    on_postgres = await crawl_into(
        postgres_store(postgres_url, tmp_path / "postgresql"), simulator, tmp_path
    )

    query = on_postgres["query"]
    assert query.status == "finished" and query.pages_fetched == 6
    assert query.stop_reason == dict.fromkeys(
        ("mojeek", "semantic_scholar", "openalex"), "max_pages"
    )
    assert on_postgres["attribution"]["both"] >= 4
    assert len(on_postgres["items"]) == query.items > 0
    for name in ("query", "pages", "items", "papers", "attribution"):
        assert on_postgres[name] == on_sqlite[name], name
