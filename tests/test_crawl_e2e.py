"""End-to-end crawls against the simulator over loopback HTTP, read back from SQLite."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import pytest_twisted

from tests.conftest import query_db, run_crawl, run_scrapy


def stored_items(db_path: Path, engine: str) -> list:
    return query_db(
        db_path,
        "SELECT page_number, rank, normalized_url FROM serp_items WHERE engine = ? ORDER BY rank",
        (engine,),
    )


def assert_pages_stored(db_path: Path, engine: str, pages: list[int], log: str = "") -> None:
    rows = stored_items(db_path, engine)
    assert sorted({row["page_number"] for row in rows}) == pages, log[-3000:]
    ranks = [row["rank"] for row in rows]
    assert ranks == list(range(1, len(rows) + 1)), "ranks strictly increasing from 1"
    page_order = [row["page_number"] for row in rows]
    assert page_order == sorted(page_order), "rank follows first appearance across pages"
    urls = [row["normalized_url"] for row in rows]
    assert len(urls) == len(set(urls)), "no duplicate normalized_url"


def the_query(db_path: Path):
    (row,) = query_db(db_path, "SELECT * FROM queries")
    return row


@pytest.mark.parametrize("engine", ["duckduckgo", "mojeek"])
@pytest_twisted.ensureDeferred
async def test_three_pages_are_stored_with_their_page_numbers(simulator, db_path, engine):
    await run_crawl(simulator, db_path, query="climate adaptation", engine=engine, serp_max_pages=3)

    assert_pages_stored(db_path, engine, [1, 2, 3])
    query = the_query(db_path)
    assert query["status"] == "finished"
    assert query["pages_fetched"] == 3
    assert query["items"] == len(stored_items(db_path, engine)) == 30
    assert json.loads(query["stop_reason"]) == {engine: "max_pages"}
    pages = query_db(db_path, "SELECT page_number, results, items_stored FROM serp_pages")
    assert [(p["page_number"], p["items_stored"]) for p in pages] == [(1, 10), (2, 10), (3, 10)]
    assert len(simulator.requests(engine)) == 3


@pytest_twisted.ensureDeferred
async def test_duckduckgo_pages_by_posting_the_next_form_with_its_token(simulator, db_path):
    await run_crawl(
        simulator, db_path, query="sea level rise", engine="duckduckgo", serp_max_pages=3
    )

    requests = simulator.requests("duckduckgo")
    assert [r["method"] for r in requests] == ["GET", "POST", "POST"]
    assert "s" not in requests[0]["params"]
    assert [r["params"]["s"] for r in requests[1:]] == ["10", "20"]
    assert all(r["params"]["vqd"].startswith("4-") for r in requests[1:])


@pytest_twisted.ensureDeferred
async def test_mojeek_omits_s_on_page_one_and_counts_from_eleven(simulator, db_path):
    await run_crawl(simulator, db_path, query="urban heat", engine="mojeek", serp_max_pages=3)

    params = [r["params"] for r in simulator.requests("mojeek")]
    assert "s" not in params[0]
    assert [p["s"] for p in params[1:]] == ["11", "21"]


@pytest_twisted.ensureDeferred
async def test_an_empty_page_ends_pagination_early(start_simulator, db_path):
    simulator = start_simulator("--empty-after", "mojeek:2")
    await run_crawl(simulator, db_path, query="drought", engine="mojeek", serp_max_pages=5)

    assert_pages_stored(db_path, "mojeek", [1, 2])
    assert json.loads(the_query(db_path)["stop_reason"]) == {"mojeek": "empty_page"}
    assert len(simulator.requests("mojeek")) == 3


@pytest_twisted.ensureDeferred
async def test_a_captcha_keeps_the_pages_before_it(start_simulator, db_path):
    simulator = start_simulator("--captcha-at", "duckduckgo:3")
    crawler = await run_crawl(
        simulator, db_path, query="flood risk", engine="duckduckgo", serp_max_pages=5
    )

    assert_pages_stored(db_path, "duckduckgo", [1, 2])
    assert json.loads(the_query(db_path)["stop_reason"]) == {"duckduckgo": "blocked"}
    outcomes = query_db(db_path, "SELECT page_number, outcome FROM serp_pages ORDER BY page_number")
    assert [(o["page_number"], o["outcome"]) for o in outcomes][-1] == (3, "captcha")
    assert crawler.stats.get_value("lyra/duckduckgo/outcome/captcha") == 1


@pytest_twisted.ensureDeferred
async def test_overlapping_pages_store_each_url_once(start_simulator, db_path):
    simulator = start_simulator("--overlap", "0.5")
    crawler = await run_crawl(
        simulator, db_path, query="heat waves", engine="mojeek", serp_max_pages=3
    )

    assert_pages_stored(db_path, "mojeek", [1, 2, 3])
    duplicates = crawler.stats.get_value("lyra/dropped/duplicate_url")
    assert duplicates and duplicates >= 8
    assert the_query(db_path)["items"] == 30 - duplicates


@pytest_twisted.ensureDeferred
async def test_several_crawls_share_one_database(simulator, db_path):
    for query in ("wildfire smoke", "coastal erosion"):
        await run_crawl(simulator, db_path, query=query, engine="mojeek", serp_max_pages=2)

    rows = query_db(db_path, "SELECT query_text, status, items FROM queries ORDER BY id")
    assert [(r["query_text"], r["status"], r["items"]) for r in rows] == [
        ("wildfire smoke", "finished", 20),
        ("coastal erosion", "finished", 20),
    ]


def scrapy_crawl(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_scrapy("crawl", "serp", *args, env=env, timeout=120)


def test_scrapy_crawl_command_stores_pages(simulator, db_path):
    result = scrapy_crawl(
        "-a",
        "query=ocean acidification",
        "-a",
        "engine=mojeek",
        "-a",
        "serp_max_pages=2",
        # mojeek alone: with the paper APIs beside it, a result they listed first is theirs
        # (the query keeps a URL's first appearance), and which answers first varies.
        "-a",
        "sources=serp",
        env={
            "LYRA_SIMULATOR_URL": simulator.url,
            "LYRA_DB_PATH": str(db_path),
            "LYRA_RATE_LIMIT_ENABLED": "false",
        },
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert_pages_stored(db_path, "mojeek", [1, 2], result.stderr)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-a", "query=x", "-a", "serp_max_pages=11"],
            "serp_max_pages must be a whole number from 1 to 10",
        ),
        (["-a", "query=x", "-a", "engine=nosuch"], "engine 'nosuch' is unknown"),
        (["-a", "query=   "], "query is required"),
        (["-a", "query=x", "-a", "strategy=greedy"], "strategy must be one of"),
        (
            ["-a", "query=x", "-a", "engine=mojeek", "-a", "time_range=week"],
            "does not support time_range",
        ),
        (["-a", "query=x", "-a", "colour=blue"], "unknown spider argument 'colour'"),
        (
            ["-a", "query=x", "-a", "sources=serp,scopus"],
            "sources names 'scopus', which is not available",
        ),
        (
            ["-a", "query=x", "-a", "engine=mojeek", "-a", "sources=openalex"],
            "engine 'mojeek' is given but sources (openalex) has no serp",
        ),
        (
            ["-a", "query=x", "-a", "citation_depth=3"],
            "citation_depth must be a whole number from 0 to 2 (got '3')",
        ),
        (
            ["-a", "query=x", "-a", "citation_top_k=none"],
            "citation_top_k must be a whole number >= 1 (got 'none'): -a citation_top_k=N",
        ),
    ],
)
def test_bad_arguments_print_one_message_and_send_nothing(simulator, db_path, args, message):
    result = scrapy_crawl(
        *args, env={"LYRA_SIMULATOR_URL": simulator.url, "LYRA_DB_PATH": str(db_path)}
    )

    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0]
    assert "Traceback" not in result.stderr
    assert simulator.requests() == []
