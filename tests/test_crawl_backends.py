"""The core crawl on both backends: one SQLite file for everything, and PostgreSQL for results
with Redis for coordination. Each test crawls the simulator in this process and reads what the
crawl left through the protocols, so the same assertions hold on either backend."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_twisted

from lyra_crawl.backend_urls import sqlite_url
from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.politeness.breaker import BreakerState
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.simulator.citations import PaperKey
from tests.conftest import edited_config, in_own_loop, run_crawl, run_scrapy
from tests.test_citations_e2e import expected_edges

T = TypeVar("T")


@dataclass(frozen=True)
class Backend:
    name: str
    settings: dict[str, str]

    def run(self, work: Callable[[Backends], Awaitable[T]]) -> T:
        return in_own_loop(with_backends(self.settings, work))

    async def crawl(self, simulator: Any, tmp_path: Path, settings: dict[str, Any], **args: Any):
        # LYRA_DB_PATH, which the shared crawl settings set, is emptied: the URLs name the
        # backends.
        return await run_crawl(
            simulator,
            tmp_path / "unused.sqlite3",
            {"LYRA_DB_PATH": "", **self.settings, **settings},
            **args,
        )


@pytest.fixture(params=["sqlite", "postgres+redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", {"LYRA_DB_URL": sqlite_url(tmp_path / "lyra.sqlite3")})
    return Backend(
        "postgres+redis",
        {
            "LYRA_DB_URL": request.getfixturevalue("postgres_url"),
            "LYRA_COORDINATION_URL": request.getfixturevalue("redis_url"),
        },
    )


async def queries(backends: Backends) -> list[Any]:
    store = backends.store
    return [await store.query(query_id) for query_id in await store.query_ids()]


async def last_query_pages_and_items(backends: Backends) -> tuple[Any, list[Any], list[Any]]:
    store = backends.store
    query_id = (await store.query_ids())[-1]
    return await store.query(query_id), await store.pages(query_id), await store.items(query_id)


@pytest_twisted.ensureDeferred
async def test_pages_by_token_are_stored_whole_with_their_page_numbers(
    backend, simulator, tmp_path
):
    await backend.crawl(
        simulator,
        tmp_path,
        {},
        query="salt marsh",
        engine="duckduckgo",
        serp_max_pages=3,
        strategy="fixed",
    )

    query, pages, items = backend.run(last_query_pages_and_items)
    assert (query.status, query.stop_reason) == ("finished", {"duckduckgo": "max_pages"})
    assert [page.page_number for page in pages] == [1, 2, 3]
    assert [page.items_stored for page in pages] == [10, 10, 10]
    assert sorted({item.page_number for item in items}) == [1, 2, 3]
    assert len({item.normalized_url for item in items}) == len(items) == query.items == 30
    assert len(simulator.requests("duckduckgo")) == 3


@pytest_twisted.ensureDeferred
async def test_a_captcha_keeps_earlier_pages_and_opens_the_breaker_for_the_next_crawl(
    backend, start_simulator, tmp_path
):
    blocking = start_simulator("--captcha-at", "duckduckgo:3")
    await backend.crawl(
        blocking,
        tmp_path,
        {},
        query="kelp forest",
        engine="duckduckgo",
        serp_max_pages=5,
        strategy="fixed",
    )
    query, pages, items = backend.run(last_query_pages_and_items)
    assert [(page.page_number, page.outcome) for page in pages] == [
        (1, "ok"),
        (2, "ok"),
        (3, "captcha"),
    ]
    assert sorted({item.page_number for item in items}) == [1, 2]
    assert query.stop_reason == {"duckduckgo": "blocked"}

    async def politeness(backends: Backends):
        return (
            await backends.coordinator.breaker_health("duckduckgo"),
            await backends.store.open_interventions(),
        )

    health, interventions = backend.run(politeness)
    assert health.state is BreakerState.OPEN and health.last_reason == "captcha"
    assert [(i.engine, i.kind, i.query_id) for i in interventions] == [
        ("duckduckgo", "captcha", query.id)
    ]

    await backend.crawl(blocking, tmp_path, {}, query="sea grass", engine="duckduckgo")
    refused, _, _ = backend.run(last_query_pages_and_items)
    assert refused.stop_reason == {"duckduckgo": "blocked"}
    assert len(blocking.requests("duckduckgo")) == 3, "nothing sent while the breaker is open"


@pytest_twisted.ensureDeferred
async def test_the_daily_limit_holds_across_crawls(backend, simulator, tmp_path):
    config = str(
        edited_config(tmp_path / "config", lambda p: p["engines"]["mojeek"].update(daily_limit=4))
    )
    settings = {"LYRA_CONFIG_DIR": config}

    for text in ("tundra", "taiga"):
        await backend.crawl(
            simulator,
            tmp_path,
            settings,
            query=text,
            engine="mojeek",
            serp_max_pages=3,
            strategy="fixed",
        )

    first, second = backend.run(queries)
    assert first.stop_reason == {"mojeek": "max_pages"} and first.pages_fetched == 3
    assert second.stop_reason == {"mojeek": "quota"} and second.pages_fetched == 1
    assert len(simulator.requests("mojeek")) == 4
    used = backend.run(lambda b: b.coordinator.quota_used("mojeek", utc_date()))
    assert used == 4


@pytest_twisted.ensureDeferred
async def test_a_fresh_cache_entry_answers_the_same_search_without_a_request(
    backend, simulator, tmp_path
):
    args = {"query": "peat bog", "engine": "mojeek", "serp_max_pages": 2, "strategy": "fixed"}
    await backend.crawl(simulator, tmp_path, {}, **args)
    await backend.crawl(simulator, tmp_path, {}, **args)

    async def both(backends: Backends):
        store = backends.store
        first, second = await store.query_ids()
        return (
            await store.query(second),
            [(i.normalized_url, i.page_number) for i in await store.items(first)],
            [(i.normalized_url, i.page_number) for i in await store.items(second)],
        )

    replayed, first_items, replayed_items = backend.run(both)
    assert replayed.cache_hit and replayed.cached_from is not None
    assert replayed_items == first_items and len(first_items) == 20
    assert len(simulator.requests("mojeek")) == 2, "the second crawl sent nothing"


def test_a_batch_is_one_crawl_of_its_entries(backend, simulator, tmp_path):
    batch = tmp_path / "batch.yaml"
    batch.write_text(
        "defaults: {serp_max_pages: 2, strategy: fixed, sources: [serp]}\n"
        "queries: [{query: fjord, engine: mojeek}, {query: delta, engine: duckduckgo},"
        " {query: atoll, engine: qwant}, {query: bad, serp_max_pages: 99}]\n"
    )
    env = {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_RATE_LIMIT_ENABLED": "false",
        "LYRA_PROGRESS_INTERVAL": "0",
        **backend.settings,
    }

    result = run_scrapy("batch", str(batch), env=env)

    assert result.returncode == 1, "the bad entry was rejected: " + result.stderr[-2000:]
    assert "entry 4" in result.stderr and "serp_max_pages" in result.stderr
    assert " ERROR: " not in result.stderr, "the rejected entry is the only problem"

    async def entries_and_pages(backends: Backends):
        store = backends.store
        entries = await store.batch_entries(1)
        return entries, [
            [page.page_number for page in await store.pages(entry.query_id)]
            for entry in entries
            if entry.query_id is not None
        ]

    entries, pages = backend.run(entries_and_pages)
    assert [entry.state for entry in entries] == ["done", "done", "done", "rejected"]
    assert pages == [[1, 2]] * 3
    assert len(simulator.requests()) == 6


def sim_index(title: str) -> int:
    """The simulator's result number, which ends every title it serves (before any suffix)."""
    numbers = re.findall(r"\d+", title)
    assert numbers, title
    return int(numbers[-1])


@pytest_twisted.ensureDeferred
async def test_two_queries_of_a_task_finding_a_paper_without_identifiers_store_one_row(
    backend, start_simulator, tmp_path
):
    # The simulator's results depend on the query text, so the two queries share it and differ
    # in SERP engine and paper API: OpenAlex and Semantic Scholar spell a title each their own
    # way, and most results carry no DOI, arXiv id or PMID in either (title, year and authors).
    simulator = start_simulator("--results-total", "300")
    shared = {"query": "urban heat islands", "task_id": "t1", "serp_max_pages": 1}
    await backend.crawl(simulator, tmp_path, {}, engine="mojeek", sources="serp,openalex", **shared)
    await backend.crawl(
        simulator, tmp_path, {}, engine="duckduckgo", sources="serp,semantic_scholar", **shared
    )

    async def items_by_query(backends: Backends):
        store = backends.store
        return [await store.items(query_id) for query_id in await store.query_ids(task_id="t1")]

    first, second = backend.run(items_by_query)
    rows_of_result: dict[int, set[int]] = {}
    for item in first + second:
        if item.paper_id is not None:
            rows_of_result.setdefault(sim_index(item.title), set()).add(item.paper_id)
    assert rows_of_result and all(len(rows) == 1 for rows in rows_of_result.values()), (
        "one paper is one row"
    )

    def plain(items, source):
        return {
            sim_index(item.title): item
            for item in items
            if item.source == source and not (item.doi or item.arxiv_id or item.pmid)
        }

    from_openalex, from_s2 = plain(first, "openalex"), plain(second, "semantic_scholar")
    both = from_openalex.keys() & from_s2.keys()
    assert len(both) >= 30, "the two queries share papers with no identifier"
    for index in both:
        assert from_openalex[index].title != from_s2[index].title or index % 4 == 3
        assert from_openalex[index].paper_id == from_s2[index].paper_id is not None


@pytest_twisted.ensureDeferred
async def test_a_citation_graph_is_fetched_and_stored_alike_on_both_backends(
    backend, start_simulator, tmp_path
):
    simulator = start_simulator("--results-total", "20")

    await backend.crawl(
        simulator,
        tmp_path,
        {},
        query="peat bogs",
        sources="semantic_scholar,openalex",
        serp_max_pages=1,
        task_id="bogs",
        citation_depth=1,
        citation_top_k=20,
    )

    async def graph(backends: Backends):
        store = backends.store
        (query_id,) = await store.query_ids(task_id="bogs")
        return await store.citation_fetches(query_id), await store.task_citation_graph("bogs")

    fetches, found = backend.run(graph)
    # The fifteen papers with an abstract, two lists at each API, and exactly the edges the
    # simulator's graph has at them.
    assert len(fetches) == 60 and {f.status for f in fetches} == {"done"}
    keys = {paper.id: PaperKey("peat bogs", sim_index(paper.title)) for paper in found.papers}
    edges = {(keys[e.citing], keys[e.cited], e.source) for e in found.edges}
    assert len(edges) == len(found.edges)
    assert edges == expected_edges([keys[paper_id] for paper_id in {f.paper_id for f in fetches}])
