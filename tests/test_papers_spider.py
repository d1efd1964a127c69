"""`scrapy crawl papers`: abstracts read from the simulator's landing pages over real HTTP, the
pages without one recorded with their outcome, the daily budget and robots.txt obeyed, and bad
arguments refused before any request."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_twisted
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.utils.defer import deferred_from_coro

from lyra_crawl.backends import Backends
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import CanonicalPaper, PaperRecord
from lyra_crawl.records import PageRecord, QueryRecord
from lyra_crawl.simulator.citations import PaperKey
from lyra_crawl.simulator.corpus import abstract_of, doi_of, make_result
from lyra_crawl.simulator.engines.landing import landing_kind
from lyra_crawl.spiders.papers import PapersSpider
from tests.conftest import (
    Simulator,
    assert_no_errors,
    crawl_settings,
    logged_errors,
    query_db,
    run_crawl,
    run_scrapy,
    scrapy_env,
    with_store,
)

QUERY = "peatland carbon"
TASK = "peat"
# Answers of the simulator's landing pages, by the kind of page a paper has (its number).
KIND_OUTCOMES = {"none": "too_short", "forbidden": "blocked"}
# The field pages of these kinds give their abstract in (the others give it in metadata).
KIND_FIELDS = {"body": "body:div.abstract", "microdata": "microdata:description"}
# The publishers' robots.txt keeps each query's paper 19 off limits.
OFF_LIMITS = 19
# Politeness stays on (robots.txt, AutoThrottle); only its waits shrink for the test.
FAST = {"DOWNLOAD_DELAY": 0, "AUTOTHROTTLE_START_DELAY": 0}


async def crawl_task(simulator: Simulator, db_path: Path) -> None:
    """One query of the task through a SERP engine and the paper APIs: its papers, some queued
    for a fetch (the APIs withhold every fourth paper's abstract)."""
    await run_crawl(
        simulator,
        db_path,
        query=QUERY,
        task_id=TASK,
        engine="mojeek",
        serp_max_pages=1,
        sources="serp,semantic_scholar,openalex",
    )


async def crawl_papers(
    simulator: Simulator, db_path: Path, settings: dict[str, Any] | None = None, **args: Any
) -> Crawler:
    runner = CrawlerRunner(crawl_settings(simulator, db_path, **FAST, **(settings or {})))
    crawler = runner.create_crawler(PapersSpider)
    with logged_errors() as errors:
        await deferred_from_coro(crawler.crawl_async(**args))
    assert_no_errors(crawler, errors)
    return crawler


def queued(db_path: Path) -> dict[int, str]:
    """The papers the task's query found that are queued for a fetch, with their fetch URL
    (the papers its citation graph reached are not the query's)."""
    rows = query_db(
        db_path,
        "SELECT id, fetch_url FROM papers WHERE evidence = 'fetch'"
        " AND id IN (SELECT paper_id FROM serp_items)",
    )
    return {row["id"]: row["fetch_url"] for row in rows}


def number_of(url: str) -> int | None:
    """The simulated paper a publisher page or DOI link is of; None for other pages."""
    parts = urlsplit(url)
    if parts.hostname == "doi.org":
        doi = parts.path.lstrip("/")
        return next(n for n in range(1000) if doi_of(QUERY, n) == doi)
    last = parts.path.rsplit("/", 1)[-1]
    return int(last) if last.isdigit() and "semanticscholar" not in url else None


def expected_outcome(url: str) -> str:
    number = number_of(url)
    if number is None:
        return "not_found"  # a Semantic Scholar paper page: no publisher's
    if number == OFF_LIMITS:
        return "robots_disallowed"
    return KIND_OUTCOMES.get(landing_kind(PaperKey(QUERY, number)), "abstract")


def landing_requests(simulator: Simulator) -> list[str]:
    return [entry["path"] for entry in simulator.requests("landing")]


def papers_asked(paths: list[str]) -> set[int | None]:
    """The simulated papers whose pages these requests asked for (a DOI link and the page it
    redirects to are one paper's)."""
    return {number_of(f"https://doi.org{p}" if p.startswith("/10.") else p) for p in paths}


@pytest_twisted.ensureDeferred
async def test_abstracts_are_read_from_landing_pages_and_pages_without_one_are_recorded(
    simulator, db_path
):
    await crawl_task(simulator, db_path)
    before = queued(db_path)

    crawler = await crawl_papers(simulator, db_path, task_id=TASK)

    pages = {
        row["paper_id"]: row
        for row in query_db(db_path, "SELECT * FROM landing_pages ORDER BY paper_id")
    }
    assert set(pages) == set(before)  # one page per paper queued, none for the others
    assert len(before) >= 20
    papers = {row["id"]: row for row in query_db(db_path, "SELECT * FROM papers")}
    for paper_id, page in pages.items():
        outcome = expected_outcome(page["url"])
        assert page["outcome"] == outcome, (page["url"], page["detail"])
        assert page["attempts"] == 1
        paper = papers[paper_id]
        if outcome == "abstract":
            number = number_of(page["url"])
            result = make_result(QUERY, number, on_topic=True)
            assert paper["abstract"] == abstract_of(result)
            assert (paper["evidence"], paper["fetch_url"]) == ("abstract", None)
            assert page["metadata_field"] and page["http_status"] == 200
            kind = landing_kind(PaperKey(QUERY, number))
            if kind in KIND_FIELDS:
                assert page["metadata_field"] == KIND_FIELDS[kind], page["url"]
            else:
                assert not page["metadata_field"].startswith(("body:", "microdata:"))
        else:
            assert (paper["evidence"], paper["fetch_url"]) == ("fetch", before[paper_id])
    outcomes = {page["outcome"] for page in pages.values()}
    assert {"abstract", "too_short", "blocked", "robots_disallowed", "not_found"} <= outcomes
    # Body-only and microdata-only pages were among them, and gave their papers an abstract.
    assert set(KIND_FIELDS.values()) <= {page["metadata_field"] for page in pages.values()}
    # robots.txt read once, and the page it disallows never asked for.
    assert len(simulator.requests("robots.txt")) == 1
    assert not [p for p in landing_requests(simulator) if p.endswith(f"/{OFF_LIMITS}")]
    stats = crawler.stats.get_stats()
    assert stats["lyra/papers/outcome/abstract"] == sum(
        page["outcome"] == "abstract" for page in pages.values()
    )


@pytest_twisted.ensureDeferred
async def test_a_second_run_asks_again_only_for_pages_that_may_pass(simulator, db_path):
    await crawl_task(simulator, db_path)
    await crawl_papers(simulator, db_path, task_id=TASK)
    asked_first = len(landing_requests(simulator))

    await crawl_papers(simulator, db_path, query_id=1)

    pages = query_db(db_path, "SELECT outcome, attempts FROM landing_pages")
    again = [row for row in pages if row["attempts"] == 2]
    assert again and {row["outcome"] for row in again} == {"blocked"}
    assert all(row["attempts"] == 1 for row in pages if row["outcome"] != "blocked")
    # Asked again: the blocked pages, nothing else.
    numbers = papers_asked(landing_requests(simulator)[asked_first:])
    assert len(numbers) == len(again)
    assert {landing_kind(PaperKey(QUERY, n)) for n in numbers} == {"forbidden"}


@pytest_twisted.ensureDeferred
async def test_the_daily_budget_holds_across_crawls(simulator, db_path):
    await crawl_task(simulator, db_path)
    budget = {"LYRA_PAPERS_DAILY_BUDGET": "3"}

    first = await crawl_papers(simulator, db_path, budget, task_id=TASK)
    second = await crawl_papers(simulator, db_path, budget, task_id=TASK)

    rows = query_db(db_path, "SELECT count(*) AS n FROM landing_pages")
    assert rows[0]["n"] == 3
    usage = query_db(
        db_path, "SELECT usage_count FROM engine_usage WHERE engine = ?", ["landing_pages"]
    )
    assert usage[0]["usage_count"] == 3
    assert first.stats.get_value("lyra/papers/budget_spent") == 1
    assert second.stats.get_value("lyra/papers/budget_spent") == 1
    assert len(papers_asked(landing_requests(simulator))) == 3


@pytest_twisted.ensureDeferred
async def test_a_page_that_is_a_pdf_is_not_html_and_not_downloaded_whole(simulator, db_path):
    pdf = "https://repository.sim/pdf/0123456789ab.pdf"
    with_store(db_path, lambda backends: store_pdf_only_paper(backends, pdf))

    await crawl_papers(simulator, db_path, query_id=1)

    (page,) = query_db(db_path, "SELECT url, outcome, detail FROM landing_pages")
    assert (page["url"], page["outcome"]) == (pdf, "not_html")
    assert "application/pdf" in page["detail"]


async def store_pdf_only_paper(backends: Backends, url: str) -> None:
    """A query whose one result is a paper an API knows only by its open-access PDF."""
    store = backends.store
    query_id = await store.start_query(
        QueryRecord(
            "pdf", "pdf", engine="openalex", serp_page=1, serp_max_pages=1, strategy="fixed"
        )
    )
    title = "Carbon in boreal peat, a reading of the record"
    await store.store_page(
        PageRecord(query_id, "openalex", 1, "ok", 1),
        [
            ResultItem(
                url,
                title,
                query_id=query_id,
                source="openalex",
                kind="api",
                rank=1,
                page_number=1,
                position=1,
                normalized_url=url,
            )
        ],
    )
    paper = CanonicalPaper(
        key=1,
        records=[PaperRecord(source="openalex", title=title, url=url)],
        doi=None,
        arxiv_id=None,
        pmid=None,
        title=title,
        normalized_title=title.lower(),
        year=2020,
        authors=(),
        venue=None,
        abstract=None,
        sources={"openalex"},
        attribution="api_only",
    )
    await store.save_papers(
        query_id, [(paper, [url])], {url: 1}, {"api_only": 1}, min_abstract_chars=200
    )


@pytest_twisted.ensureDeferred
async def test_scrapy_crawl_papers_runs_from_the_command_line(simulator, db_path):
    await crawl_task(simulator, db_path)

    result = run_scrapy(
        "crawl",
        "papers",
        "-a",
        f"task_id={TASK}",
        *(arg for name, value in FAST.items() for arg in ("-s", f"{name}={value}")),
        env=scrapy_env(simulator, db_path),
    )

    assert result.returncode == 0, result.stderr[-2000:]
    assert " ERROR: " not in result.stderr
    pages = query_db(db_path, "SELECT outcome FROM landing_pages")
    assert len(pages) == len(queued(db_path)) + sum(p["outcome"] == "abstract" for p in pages)


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "the papers spider reads the papers of a task or of a query"),
        (
            ["-a", "task_id=t1", "-a", "query_id=1"],
            {},
            "task_id and query_id cannot go together",
        ),
        (["-a", "query_id=first"], {}, "query_id must be a whole number >= 1 (got 'first')"),
        (["-a", "task_id=t1", "-a", "engine=mojeek"], {}, "unknown spider argument 'engine'"),
        (["-a", "task_id=nosuch"], {}, "task_id 'nosuch' has no queries in the store"),
        (["-a", "query_id=7"], {}, "query_id 7 is not in the store"),
        (
            ["-a", "task_id=t1"],
            {"LYRA_PAPERS_DAILY_BUDGET": "lots"},
            "LYRA_PAPERS_DAILY_BUDGET must be a whole number of pages of at least 1",
        ),
    ],
)
def test_bad_arguments_print_one_message_and_send_nothing(simulator, db_path, args, env, message):
    result = run_scrapy("crawl", "papers", *args, env={**scrapy_env(simulator, db_path), **env})

    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert simulator.requests() == []
