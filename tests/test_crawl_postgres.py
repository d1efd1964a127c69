"""The core crawl with its results in PostgreSQL: the same crawl stores the same records as on
SQLite, read back through the ResultStore protocol."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest_twisted

from lyra_crawl.backends import Backends
from lyra_crawl.quoting import redact_url
from tests.backends.test_store import (
    StoreUnderTest,
    postgres_store,
    sqlite_store,
    without_instants,
)
from tests.conftest import run_crawl, scrapy_env, start_scrapy
from tests.servers.postgres import PASSWORD

# One source: with several, which page is stored first (and so keeps a URL two sources share)
# depends on timing, on any backend.
CRAWL = {
    "query": "soil carbon",
    "engine": "mojeek",
    "serp_max_pages": 3,
    "sources": "serp",
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
    assert query.status == "finished" and query.pages_fetched == 3
    assert query.stop_reason == {"mojeek": "max_pages"}
    assert len(on_postgres["items"]) == query.items == 30
    assert on_postgres["papers"], "the DOI results became papers"
    for name in ("query", "pages", "items", "papers", "attribution"):
        assert on_postgres[name] == on_sqlite[name], name


def test_postgresql_lost_mid_crawl_stops_it_with_exit_1_keeping_the_stored_pages(
    start_simulator, tmp_path, postgres_url
):
    simulator = start_simulator("--hold-at", "mojeek:3")
    store = postgres_store(postgres_url, tmp_path)
    store.run(lambda backends: backends.store.query_ids())  # the schema, before the crawl
    env = {
        **scrapy_env(simulator, tmp_path / "unused.sqlite3"),
        "LYRA_DB_PATH": "",
        **store.settings,
    }
    crawl = start_scrapy(
        "crawl",
        "serp",
        "-a",
        "query=x",
        "-a",
        "engine=mojeek",
        "-a",
        "sources=serp",
        "-a",
        "serp_max_pages=8",
        "-a",
        "strategy=fixed",
        env=env,
    )
    try:
        # Mid-crawl: pages 1 and 2 answered, page 3 held until the connections are gone.
        assert simulator.held("mojeek", 3, timeout_s=60), "the crawl never asked for page 3"
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            # Every connection of the crawl ends, as when the server restarts. Only this
            # user's: an autovacuum worker on the database is the superuser's, not ours to end.
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND usename = current_user"
            )
        simulator.release("mojeek", 3)
        _, stderr = crawl.communicate(timeout=120)
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()

    assert crawl.returncode == 1, stderr[-3000:]
    assert f"LYRA_DB_URL {redact_url(postgres_url)} failed (" in stderr
    assert PASSWORD not in stderr
    pages = store.run(stored)["pages"]
    assert 1 <= len(pages) < 8
