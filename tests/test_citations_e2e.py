"""The citation graph over real HTTP: a crawl of the simulator's paper APIs fetches the
references and citations of its top papers through the politeness chain and stores exactly the
edges the simulator's graph has (lyra_crawl.simulator.citations), the papers at the other end
merged into the paper index: into the query's own papers where they are one of them."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import Request, signals
from scrapy.crawler import CrawlerRunner
from scrapy.utils.defer import deferred_from_coro

from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.session.request_state import RequestKind, request_state
from lyra_crawl.simulator.citations import PaperKey, citations, references, unmatched
from lyra_crawl.spiders.serp import SerpSpider
from tests.conftest import (
    assert_no_errors,
    crawl_settings,
    edited_config,
    logged_errors,
    query_db,
    run_crawl,
    with_store,
)

# Its paper 17 (a paper with an abstract) cites paper 10, which has a preprint, under the
# preprint's ids (lyra_crawl.simulator.citations).
QUERY = "peat bogs"
APIS = ("semantic_scholar", "openalex")
# Twenty results per source: the query's papers are corpus papers 0..19, all on page 1.
SHOWN = 20
SMALL = ("--results-total", str(SHOWN))
# Semantic Scholar's lists, OpenAlex's works by id; OpenAlex's lookups and lists are filters.
GRAPH_PATHS = re.compile(r"/graph/v1/paper/(?!search)|/works/")


async def graph_crawl(
    simulator: Any, db_path: Path, settings: dict[str, Any] | None = None, **arguments: Any
) -> Any:
    return await run_crawl(
        simulator,
        db_path,
        settings,
        query=QUERY,
        sources=",".join(APIS),
        serp_max_pages=1,
        strategy="fixed",
        task_id="coasts",
        **arguments,
    )


def number(title: str) -> int:
    """The simulator's paper number, which ends every title it serves (before any suffix)."""
    return int(re.findall(r"\d+", title)[-1])


def key_of(paper: sqlite3.Row) -> PaperKey:
    return PaperKey(QUERY, number(paper["title"]))


def read_from_abstract(paper: sqlite3.Row) -> bool:
    return paper["evidence"] == "abstract"


def papers_by_id(db_path: Path) -> dict[int, sqlite3.Row]:
    return {row["id"]: row for row in query_db(db_path, "SELECT * FROM papers")}


def expected_seeds(db_path: Path, top_k: int) -> list[int]:
    """The query's top_k papers read from their abstract, by their best fused rank."""
    papers = papers_by_id(db_path)
    best: dict[int, int] = {}
    for item in query_db(db_path, "SELECT paper_id, fused_rank FROM serp_items"):
        paper_id = item["paper_id"]
        best[paper_id] = min(best.get(paper_id, item["fused_rank"]), item["fused_rank"])
    ranked = sorted(
        (rank, paper_id) for paper_id, rank in best.items() if read_from_abstract(papers[paper_id])
    )
    return [paper_id for _, paper_id in ranked[:top_k]]


def expected_edges(seeds: list[PaperKey]) -> set[tuple[PaperKey, PaperKey, str]]:
    """The graph's edges at a seed, as each API lists them: references it could resolve and
    every citation (an unmatched reference has no record in either)."""
    edges = set()
    for seed in seeds:
        for source in APIS:
            edges |= {(seed, cited, source) for cited in references(seed) if not unmatched(cited)}
            edges |= {(citing, seed, source) for citing in citations(seed)}
    return edges


def stored_edges(db_path: Path) -> set[tuple[PaperKey, PaperKey, str]]:
    papers = papers_by_id(db_path)
    rows = query_db(db_path, "SELECT * FROM citations")
    edges = {
        (
            key_of(papers[row["citing_paper_id"]]),
            key_of(papers[row["cited_paper_id"]]),
            row["source"],
        )
        for row in rows
    }
    assert len(edges) == len(rows), "one row per edge and source"
    return edges


def fetches(db_path: Path) -> list[sqlite3.Row]:
    return query_db(db_path, "SELECT * FROM citation_fetches ORDER BY level, paper_id, source")


def graph_requests(simulator: Any, engine: str | None = None) -> list[dict[str, Any]]:
    return [
        request
        for request in simulator.requests(engine)
        if GRAPH_PATHS.search(request["path"]) or "filter" in request["params"]
    ]


@pytest_twisted.ensureDeferred
async def test_a_depth_1_graph_has_exactly_the_simulators_edges_merged_into_the_index(
    start_simulator, db_path
):
    simulator = start_simulator(*SMALL)

    # Every paper with an abstract: 15 of the 20 (the simulator withholds every fourth's).
    crawler = await graph_crawl(simulator, db_path, citation_depth=1, citation_top_k=20)

    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "finished"
    papers = papers_by_id(db_path)
    seeds = expected_seeds(db_path, 20)
    assert len(seeds) == 15
    assert {(row["paper_id"], row["level"]) for row in fetches(db_path)} == {
        (seed, 1) for seed in seeds
    }
    assert Counter((row["status"], row["relation"]) for row in fetches(db_path)) == {
        ("done", "references"): 30,
        ("done", "citations"): 30,
    }
    seed_keys = [key_of(papers[seed]) for seed in seeds]
    expected = expected_edges(seed_keys)
    assert len(expected) > 20 and stored_edges(db_path) == expected
    # One row per paper: its Semantic Scholar and OpenAlex records (a preprint's too) are one.
    ends = {key for edge in expected for key in edge[:2]}
    rows_of = Counter(key_of(paper) for paper in papers.values())
    assert all(rows_of[key] == 1 for key in ends), [k for k in ends if rows_of[k] != 1]
    # A paper the query found itself is that row, whoever names it (here as a preprint too).
    own = {row["paper_id"] for row in query_db(db_path, "SELECT paper_id FROM serp_items")}
    found = {key_of(papers[paper_id]) for paper_id in own}
    assert found == {PaperKey(QUERY, n) for n in range(SHOWN)}
    cited_preprints = {
        cited for _, cited, _ in expected if cited.number < SHOWN and cited.number % 10 == 0
    }
    assert cited_preprints, "the graph cites a paper of the query under its preprint's id"
    assert {key for key in ends if key.number < SHOWN} <= found
    stats = crawler.stats.get_stats()
    assert stats["lyra/citations/edges"] == len(expected)
    assert stats["lyra/citations/fetch/done"] == 60


@pytest_twisted.ensureDeferred
async def test_depth_0_fetches_no_graph(start_simulator, db_path):
    simulator = start_simulator(*SMALL)

    await graph_crawl(simulator, db_path, citation_depth=0)

    assert graph_requests(simulator) == []
    assert query_db(db_path, "SELECT * FROM citations") == []
    assert fetches(db_path) == []
    assert len(simulator.requests()) == 2  # one search page of each API


@pytest_twisted.ensureDeferred
async def test_top_k_bounds_the_papers_whose_lists_are_fetched(start_simulator, db_path):
    simulator = start_simulator(*SMALL)

    await graph_crawl(simulator, db_path, citation_depth=1, citation_top_k=2)

    seeds = expected_seeds(db_path, 2)
    assert {row["paper_id"] for row in fetches(db_path)} == set(seeds)
    papers = papers_by_id(db_path)
    assert stored_edges(db_path) == expected_edges([key_of(papers[s]) for s in seeds])
    # Two lists at Semantic Scholar per paper; OpenAlex: its work, lookups, citations.
    s2 = [r for r in graph_requests(simulator) if r["engine"] == "semantic_scholar"]
    assert len(s2) == 4


@pytest_twisted.ensureDeferred
async def test_a_spent_daily_limit_stops_the_graphs_requests_to_that_api_cleanly(
    start_simulator, db_path, tmp_path
):
    simulator = start_simulator(*SMALL)
    config = edited_config(
        tmp_path / "config",
        lambda policy: policy["engines"]["semantic_scholar"].update(daily_limit=3),
    )

    crawler = await graph_crawl(
        simulator,
        db_path,
        {"LYRA_CONFIG_DIR": str(config)},
        citation_depth=1,
        citation_top_k=3,
    )

    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "finished"
    s2 = [row for row in fetches(db_path) if row["source"] == "semantic_scholar"]
    # Its search page and the first paper's two lists: then the quota refuses, once.
    assert [row["status"] for row in s2].count("done") == 2
    assert [row["status"] for row in s2].count("quota") == 4
    assert all("daily quota spent" in row["detail"] for row in s2 if row["status"] == "quota")
    assert {row["status"] for row in fetches(db_path) if row["source"] == "openalex"} == {"done"}
    assert len(simulator.requests("semantic_scholar")) == 3
    used = with_store(
        db_path, lambda backends: backends.coordinator.quota_used("semantic_scholar", utc_date())
    )
    assert used == 3
    stats = crawler.stats.get_stats()
    assert stats["lyra/semantic_scholar/refused/quota"] == 1
    assert stats["lyra/citations/fetch/quota"] == 4


@pytest_twisted.ensureDeferred
async def test_a_resumed_query_fetches_only_the_lists_it_had_not_fetched_whole(
    start_simulator, db_path
):
    simulator = start_simulator(*SMALL)
    # Every paper with an abstract, so the resumed query has the same ones whatever their ranks.
    await graph_crawl(simulator, db_path, citation_depth=1, citation_top_k=20)
    edges = stored_edges(db_path)
    # As if the crawl had been cancelled before one list of its first paper was read.
    (first, *_) = fetches(db_path)
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE queries SET status = 'cancelled'")
        conn.execute(
            "UPDATE citation_fetches SET status = 'cancelled' WHERE paper_id = ? AND source = ?"
            " AND relation = ?",
            (first["paper_id"], first["source"], first["relation"]),
        )
    conn.close()
    before = len(simulator.requests())

    await graph_crawl(simulator, db_path, citation_depth=1, citation_top_k=20, resume="true")

    again = simulator.requests()[before:]
    assert again and all(request["engine"] == first["source"] for request in again)
    assert {row["status"] for row in fetches(db_path)} == {"done"}
    assert stored_edges(db_path) == edges
    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "finished"


@pytest_twisted.ensureDeferred
async def test_depth_2_goes_on_from_the_top_papers_the_first_step_reached(start_simulator, db_path):
    simulator = start_simulator(*SMALL)

    await graph_crawl(simulator, db_path, citation_depth=2, citation_top_k=2)

    papers = papers_by_id(db_path)
    first = {row["paper_id"] for row in fetches(db_path) if row["level"] == 1}
    second = {row["paper_id"] for row in fetches(db_path) if row["level"] == 2}
    assert first == set(expected_seeds(db_path, 2))
    # The papers the first step's lists named, most edges first, read from their abstract.
    reached: Counter[int] = Counter()
    for row in query_db(db_path, "SELECT * FROM citations"):
        for seed, other in (
            (row["citing_paper_id"], row["cited_paper_id"]),
            (row["cited_paper_id"], row["citing_paper_id"]),
        ):
            if seed in first and other not in first:
                reached[other] += 1
    ranked = sorted(
        (-count, paper_id)
        for paper_id, count in reached.items()
        if read_from_abstract(papers[paper_id])
    )
    assert second == {paper_id for _, paper_id in ranked[:2]} and len(second) == 2
    assert {row["status"] for row in fetches(db_path)} == {"done"}
    seeds = [key_of(papers[paper_id]) for paper_id in first | second]
    assert stored_edges(db_path) == expected_edges(seeds)


@pytest_twisted.ensureDeferred
async def test_a_block_page_stops_the_graphs_requests_to_that_api_and_trips_its_breaker(
    start_simulator, db_path
):
    simulator = start_simulator(*SMALL, "--other-status", "semantic_scholar:429")

    crawler = await graph_crawl(simulator, db_path, citation_depth=1, citation_top_k=2)

    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "finished"
    s2 = [row for row in fetches(db_path) if row["source"] == "semantic_scholar"]
    assert [row["status"] for row in s2] == ["blocked"] * 4
    assert {row["detail"] for row in s2} == {"HTTP 429"}
    assert {row["status"] for row in fetches(db_path) if row["source"] == "openalex"} == {"done"}
    # One request, judged a block once: the breaker and a person hear of it.
    assert len(graph_requests(simulator, "semantic_scholar")) == 1
    (intervention,) = query_db(db_path, "SELECT * FROM intervention_queue")
    assert (intervention["engine"], intervention["kind"], intervention["detail"]) == (
        "semantic_scholar",
        "rate_limited",
        "HTTP 429",
    )
    stats = crawler.stats.get_stats()
    assert stats["lyra/semantic_scholar/breaker/failure/rate_limited"] == 1
    assert stats["lyra/citations/fetch/blocked"] == 4


@pytest_twisted.ensureDeferred
async def test_a_crawl_stopped_during_the_graph_ends_its_open_lists_cancelled(
    start_simulator, db_path
):
    simulator = start_simulator(*SMALL)
    runner = CrawlerRunner(crawl_settings(simulator, db_path))
    crawler = runner.create_crawler(SerpSpider)
    answered: list[Request] = []

    def stop_at_the_first_answer(response: Any, request: Request, spider: Any) -> None:
        state = request_state(request.meta)
        if state is not None and state.kind is RequestKind.CITATION and not answered:
            answered.append(request)
            deferred_from_coro(crawler.engine.close_spider_async(reason="shutdown"))

    crawler.signals.connect(stop_at_the_first_answer, signal=signals.response_received)
    with logged_errors() as errors:
        await deferred_from_coro(
            crawler.crawl_async(
                query=QUERY,
                sources=",".join(APIS),
                serp_max_pages=1,
                strategy="fixed",
                citation_depth=1,
                citation_top_k=5,
            )
        )

    assert_no_errors(crawler, errors)
    (query,) = query_db(db_path, "SELECT * FROM queries")
    assert query["status"] == "cancelled"
    statuses = Counter(row["status"] for row in fetches(db_path))
    assert statuses["cancelled"] > 0 and set(statuses) <= {"done", "cancelled"}
    # The pages found before stay, their items linked to their papers.
    pages = query_db(db_path, "SELECT source, outcome FROM serp_pages ORDER BY source")
    assert [(p["source"], p["outcome"]) for p in pages] == [
        ("openalex", "ok"),
        ("semantic_scholar", "ok"),
    ]
    assert query_db(db_path, "SELECT * FROM serp_items WHERE paper_id IS NULL") == []
