"""Three pages of every engine, crawled end to end on the simulator and read back from SQLite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_twisted

from lyra_crawl.config import load_config
from lyra_crawl.simulator.config import write_paging_config
from lyra_crawl.simulator.engines import ENGINE_NAMES
from lyra_crawl.simulator.engines.web import PAA_ANSWER_URL
from tests.conftest import query_db, run_crawl
from tests.realworld_fields import ROOTS
from tests.test_crawl_e2e import assert_pages_stored, stored_items, the_query

# Requests per page beyond the page itself.
EXTRA_REQUESTS = {"startpage": 1, "pubmed": 3}  # the token page once; esummary per page
# These tests fetch Google over plain HTTP, so its results must be in the raw HTML.
SIMULATOR_OPTIONS = {"google": ("--no-google-js",)}


@pytest.fixture
def crawlable_config(tmp_path: Path) -> Path:
    """The bundled config, with every engine paginating and Google fetched over plain HTTP.

    Google is `render: browser` (tests/test_browser_e2e.py renders it); here the simulator serves
    its results in the raw HTML (--no-google-js), so plain HTTP reads them.
    """
    return write_paging_config(tmp_path / "config", render="http")


def crawl(simulator, db_path, config_dir: Path, engine: str, **spider_args):
    return run_crawl(
        simulator,
        db_path,
        settings={"LYRA_CONFIG_DIR": str(config_dir)},
        query="climate adaptation",
        engine=engine,
        **spider_args,
    )


def page_outcomes(db_path: Path) -> list[tuple[int, str]]:
    rows = query_db(db_path, "SELECT page_number, outcome FROM serp_pages ORDER BY page_number")
    return [(row["page_number"], row["outcome"]) for row in rows]


def test_the_simulator_serves_every_engine() -> None:
    assert set(ENGINE_NAMES) == set(load_config().engines)


@pytest.mark.parametrize("engine", ENGINE_NAMES)
@pytest_twisted.ensureDeferred
async def test_three_pages_of_each_engine_are_stored(
    start_simulator, db_path, crawlable_config, engine
):
    # Deep enough for three pages of the paper APIs' 100 results.
    simulator = start_simulator("--results-total", "300", *SIMULATOR_OPTIONS.get(engine, ()))
    await crawl(simulator, db_path, crawlable_config, engine, serp_max_pages=3)

    assert_pages_stored(db_path, engine, [1, 2, 3])
    query = the_query(db_path)
    assert (query["status"], query["pages_fetched"]) == ("finished", 3)
    assert json.loads(query["stop_reason"]) == {engine: "max_pages"}
    assert page_outcomes(db_path) == [(1, "ok"), (2, "ok"), (3, "ok")]
    assert len(simulator.requests(engine)) == 3 + EXTRA_REQUESTS.get(engine, 0)


@pytest_twisted.ensureDeferred
async def test_startpage_takes_sc_from_its_home_page_then_from_each_page(
    simulator, db_path, crawlable_config
):
    await crawl(simulator, db_path, crawlable_config, "startpage", serp_max_pages=3)

    home, *pages = simulator.requests("startpage")
    assert (home["method"], home["path"]) == ("GET", "/")
    assert [(r["method"], r["path"]) for r in pages] == [("POST", "/sp/search")] * 3
    assert [r["params"].get("page") for r in pages] == [None, "2", "3"]
    assert len({r["params"]["sc"] for r in pages}) == 1


@pytest_twisted.ensureDeferred
async def test_pubmed_completes_each_page_with_esummary(simulator, db_path, crawlable_config):
    settings = {"LYRA_CONFIG_DIR": str(crawlable_config), "LYRA_CONTACT_EMAIL": "lab@example.org"}
    await run_crawl(
        simulator, db_path, settings, query="climate adaptation", engine="pubmed", serp_max_pages=2
    )

    requests = simulator.requests("pubmed")
    assert [r["path"].rsplit("/", 1)[-1] for r in requests] == ["esearch.fcgi", "esummary.fcgi"] * 2
    # NCBI's usage policy: every request names the tool and how to reach its operator.
    assert all(
        (r["params"]["tool"], r["params"]["email"]) == ("lyra_crawl", "lab@example.org")
        for r in requests
    )
    rows = query_db(db_path, "SELECT pmid, title, url FROM serp_items ORDER BY rank")
    assert len(rows) == 40 and all(row["title"] and row["pmid"] for row in rows)
    assert rows[0]["url"] == f"https://pubmed.ncbi.nlm.nih.gov/{rows[0]['pmid']}/"


@pytest.mark.parametrize("engine", ["google", "startpage", "ecosia"])
@pytest_twisted.ensureDeferred
async def test_a_redirect_to_a_captcha_page_is_a_captcha(
    start_simulator, db_path, crawlable_config, engine
):
    simulator = start_simulator("--captcha-at", f"{engine}:2", *SIMULATOR_OPTIONS.get(engine, ()))
    crawler = await crawl(simulator, db_path, crawlable_config, engine, serp_max_pages=3)

    assert_pages_stored(db_path, engine, [1])
    assert page_outcomes(db_path) == [(1, "ok"), (2, "captcha")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {engine: "blocked"}
    assert crawler.stats.get_value(f"lyra/{engine}/outcome/captcha") == 1


# Real challenge pages, each served with HTTP 200 in a results page's place. No capture of
# Brave's 2026 proof-of-work page is public: Brave gets DuckDuckGo's real anomaly page, which
# none of Brave's markers names, so only the challenge on it (its challenge form) can tell.
REAL_CHALLENGES = [
    ("brave", "shared", "serp/duckduckgo/celina-ddg-lite-anomaly-captcha-2026-07.html"),
    ("duckduckgo", "shared", "serp/duckduckgo/celina-ddg-lite-anomaly-captcha-2026-07.html"),
    ("bing", "shared", "serp/bing/wsm-bing-captcha-one-last-step-2026-04.html"),
    ("mojeek", "project", "serp/google/unlimproxy-google-sorry-captcha-2026-07.html"),
]


@pytest_twisted.ensureDeferred
async def test_google_stores_its_organic_results_not_the_answers_among_them(
    start_simulator, db_path, crawlable_config
):
    simulator = start_simulator(*SIMULATOR_OPTIONS["google"])
    crawler = await crawl(simulator, db_path, crawlable_config, "google", serp_max_pages=2)

    assert_pages_stored(db_path, "google", [1, 2])
    urls = [row["normalized_url"] for row in stored_items(db_path, "google")]
    assert len(urls) == 20 and not any(url.startswith(PAA_ANSWER_URL) for url in urls)
    assert crawler.stats.get_value("lyra/dropped/module") == 2


@pytest.mark.parametrize(("engine", "root", "rel"), REAL_CHALLENGES)
@pytest_twisted.ensureDeferred
async def test_a_real_challenge_page_served_with_200_is_a_captcha_and_opens_the_breaker(
    start_simulator, db_path, crawlable_config, engine, root, rel
):
    page = ROOTS[root] / rel
    if not page.is_file():
        pytest.skip(f"real page not found at {page} (set LYRA_REALWORLD_DIR)")
    simulator = start_simulator(
        "--captcha-at", f"{engine}:2", "--challenge-page", f"{engine}={page}"
    )
    crawler = await crawl(simulator, db_path, crawlable_config, engine, serp_max_pages=3)

    assert page_outcomes(db_path) == [(1, "ok"), (2, "captcha")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {engine: "blocked"}
    assert crawler.stats.get_value(f"lyra/{engine}/outcome/captcha") == 1
    assert_blocked_and_queued(db_path, engine, "captcha")


@pytest.mark.parametrize(("engine", "detail"), [("mojeek", "repeat"), ("bing", "number")])
@pytest_twisted.ensureDeferred
async def test_a_repeated_page_is_a_soft_block(
    start_simulator, db_path, crawlable_config, engine, detail
):
    simulator = start_simulator("--repeat-at", f"{engine}:3")
    await crawl(simulator, db_path, crawlable_config, engine, serp_max_pages=5)

    assert_pages_stored(db_path, engine, [1, 2])
    assert page_outcomes(db_path) == [(1, "ok"), (2, "ok"), (3, "soft_block")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {engine: "blocked"}
    assert_blocked_and_queued(db_path, engine, "soft_block")


@pytest_twisted.ensureDeferred
async def test_google_pages_built_by_javascript_are_a_javascript_wall_over_http(
    start_simulator, db_path, crawlable_config
):
    simulator = start_simulator()  # Google's results come by script, as on the real engine
    await crawl(simulator, db_path, crawlable_config, "google", serp_max_pages=3)

    assert page_outcomes(db_path) == [(1, "javascript_required")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {"google": "blocked"}
    assert_blocked_and_queued(db_path, "google", "javascript_required")


def assert_blocked_and_queued(db_path, engine: str, kind: str) -> None:
    """Every block outcome, whatever found it, queues an intervention and opens the breaker."""
    queued = query_db(db_path, "SELECT engine, kind, status FROM intervention_queue")
    assert [tuple(row) for row in queued] == [(engine, kind, "open")]
    (health,) = query_db(db_path, "SELECT state FROM engine_health WHERE engine = ?", (engine,))
    assert health["state"] == "open"


@pytest_twisted.ensureDeferred
async def test_an_engines_max_pages_is_never_exceeded(simulator, db_path, crawlable_config):
    await crawl(simulator, db_path, crawlable_config, "qwant", strategy="exhaustive")

    assert_pages_stored(db_path, "qwant", [1, 2, 3, 4, 5])
    offsets = [r["params"]["offset"] for r in simulator.requests("qwant")]
    assert offsets == ["0", "10", "20", "30", "40"]
    assert json.loads(the_query(db_path)["stop_reason"]) == {"qwant": "max_pages"}


@pytest.mark.parametrize(
    ("fault", "outcomes", "stop_reason"),
    [
        (("--status-at", "openalex:2:500"), [(1, "ok"), (2, "error")], "error"),
        (("--malformed-at", "openalex:2"), [(1, "ok"), (2, "error")], "error"),
        (("--drop-at", "openalex:2"), [(1, "ok")], "error"),
        (("--captcha-at", "semantic_scholar:2"), [(1, "ok"), (2, "rate_limited")], "blocked"),
    ],
    ids=["status-500", "malformed", "drop", "rate-limited"],
)
@pytest_twisted.ensureDeferred
async def test_a_failing_paper_api_page_keeps_the_pages_before_it(
    start_simulator, db_path, crawlable_config, fault, outcomes, stop_reason
):
    engine = fault[1].split(":")[0]
    simulator = start_simulator("--results-total", "300", *fault)
    await crawl(
        simulator,
        db_path,
        crawlable_config,
        engine,
        serp_max_pages=3,
        expect_errors=stop_reason == "error",
    )

    assert_pages_stored(db_path, engine, [1])
    assert page_outcomes(db_path) == outcomes
    assert json.loads(the_query(db_path)["stop_reason"]) == {engine: stop_reason}


@pytest_twisted.ensureDeferred
async def test_paper_api_records_are_stored_with_their_ids(
    start_simulator, db_path, crawlable_config
):
    simulator = start_simulator("--results-total", "300")
    await crawl(simulator, db_path, crawlable_config, "semantic_scholar", serp_max_pages=1)

    rows = query_db(db_path, "SELECT url, doi, arxiv_id, pmid FROM serp_items")
    assert len(rows) == 100
    assert all(row["url"].startswith("https://www.semanticscholar.org/paper/") for row in rows)
    assert {bool(row["doi"]) for row in rows} == {True, False}
    assert any(row["arxiv_id"] for row in rows) and any(row["pmid"] for row in rows)
    (request,) = simulator.requests("semantic_scholar")
    assert request["path"] == "/graph/v1/paper/search"
    assert (request["params"]["offset"], request["params"]["limit"]) == ("0", "100")
