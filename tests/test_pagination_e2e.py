"""Adaptive pagination and the search-level cache, end to end on the simulator."""

from __future__ import annotations

import json

import pytest_twisted

from tests.conftest import query_db, run_crawl

RISING_OVERLAP = ("--overlap", "0.2", "--overlap-step", "0.4")  # page 4 repeats everything


def pages_of(db_path, query_id: int) -> list:
    return query_db(
        db_path,
        "SELECT page_number, novelty_rate, harvest_rate FROM serp_pages WHERE query_id = ?"
        " ORDER BY page_number",
        (query_id,),
    )


def query_row(db_path, query_id: int):
    return query_db(db_path, "SELECT * FROM queries WHERE id = ?", (query_id,))[0]


@pytest_twisted.ensureDeferred
async def test_auto_stops_on_novelty_at_the_predicted_page_while_fixed_goes_on(
    start_simulator, db_path
):
    simulator = start_simulator(*RISING_OVERLAP)
    args = {"query": "glacier melt", "engine": "mojeek", "serp_max_pages": 6, "cache": "off"}
    await run_crawl(simulator, db_path, strategy="auto", **args)
    await run_crawl(simulator, db_path, strategy="fixed", **args)

    auto, fixed = pages_of(db_path, 1), pages_of(db_path, 2)
    # Novelty per page: 1.0, 0.8, 0.4, 0.0 -> auto fetches page 4, sees nothing new, stops.
    assert [round(p["novelty_rate"], 2) for p in auto] == [1.0, 0.8, 0.4, 0.0]
    assert json.loads(query_row(db_path, 1)["stop_reason"]) == {"mojeek": "novelty"}
    assert [p["page_number"] for p in fixed] == [1, 2, 3, 4, 5, 6]
    assert json.loads(query_row(db_path, 2)["stop_reason"]) == {"mojeek": "max_pages"}
    assert len(simulator.requests("mojeek")) == 4 + 6


@pytest_twisted.ensureDeferred
async def test_auto_stops_on_harvest_when_results_drift_off_topic(start_simulator, db_path):
    simulator = start_simulator("--drift", "0.5")
    await run_crawl(
        simulator, db_path, query="coral bleaching", engine="mojeek", serp_max_pages=6, cache="off"
    )

    harvests = [p["harvest_rate"] for p in pages_of(db_path, 1)]
    # On-topic share per page: 1.0, 0.5, 0.0 -> page 3 has no relevant result.
    assert harvests[0] == 1.0 and harvests[-1] == 0.0 and len(harvests) == 3
    assert json.loads(query_row(db_path, 1)["stop_reason"]) == {"mojeek": "harvest"}
    relevance = query_db(db_path, "SELECT relevance FROM serp_items WHERE page_number = 1")
    assert all(row["relevance"] >= 0.2 for row in relevance)


@pytest_twisted.ensureDeferred
async def test_exhaustive_runs_to_the_engine_cap_ignoring_rates(start_simulator, db_path):
    simulator = start_simulator(*RISING_OVERLAP)
    await run_crawl(
        simulator, db_path, query="permafrost", engine="mojeek", strategy="exhaustive", cache="off"
    )

    assert len(pages_of(db_path, 1)) == 10  # mojeek's max_pages
    assert json.loads(query_row(db_path, 1)["stop_reason"]) == {"mojeek": "max_pages"}


@pytest_twisted.ensureDeferred
async def test_a_repeated_search_is_served_from_cache_without_a_request(simulator, db_path):
    args = {"query": "Climate  Adaptation", "engine": "duckduckgo", "serp_max_pages": 2}
    await run_crawl(simulator, db_path, **args)
    sent = len(simulator.requests())
    await run_crawl(simulator, db_path, **{**args, "query": "climate adaptation"})

    assert len(simulator.requests()) == sent == 2
    first, second = query_row(db_path, 1), query_row(db_path, 2)
    assert (second["cache_hit"], second["cached_from"]) == (1, 1)
    assert second["items"] == first["items"] == 20
    assert second["pages_fetched"] == 2

    await run_crawl(simulator, db_path, **args, cache="refresh")
    assert len(simulator.requests()) == 4
    assert query_row(db_path, 3)["cache_hit"] == 0


@pytest_twisted.ensureDeferred
async def test_a_different_depth_is_a_different_cache_entry(simulator, db_path):
    await run_crawl(simulator, db_path, query="heat", engine="mojeek", serp_max_pages=2)
    await run_crawl(simulator, db_path, query="heat", engine="mojeek", serp_max_pages=3)

    assert len(simulator.requests()) == 5
    assert query_row(db_path, 2)["cache_hit"] == 0


@pytest_twisted.ensureDeferred
async def test_history_scope_stops_a_recrawl_that_brings_nothing_new(simulator, db_path):
    args = {"query": "drought index", "engine": "mojeek", "serp_max_pages": 3, "cache": "off"}
    await run_crawl(simulator, db_path, **args)
    await run_crawl(simulator, db_path, **args, novelty_scope="history")

    recrawl = pages_of(db_path, 2)
    assert [(p["page_number"], p["novelty_rate"]) for p in recrawl] == [(1, 0.0)]
    assert json.loads(query_row(db_path, 2)["stop_reason"]) == {"mojeek": "novelty"}


@pytest_twisted.ensureDeferred
async def test_a_japanese_query_gets_a_non_zero_harvest(simulator, db_path):
    await run_crawl(simulator, db_path, query="気候変動 適応", engine="mojeek", serp_max_pages=2)

    harvests = [p["harvest_rate"] for p in pages_of(db_path, 1)]
    assert harvests and all(h > 0 for h in harvests)
