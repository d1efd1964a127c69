"""`scrapy report`: figures read back from real crawls, as text and as one HTML page."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime

import pytest
import pytest_twisted

from lyra_crawl.config import load_config
from lyra_crawl.items import ResultItem
from lyra_crawl.records import PageRecord, QueryRecord
from lyra_crawl.reports.text import query_report, quota_use
from tests.conftest import run_crawl, run_scrapy, with_store


async def crawl_twice(simulator, db_path, query: str) -> None:
    for pages in (2, 3):
        await run_crawl(
            simulator, db_path, query=query, engine="mojeek", serp_max_pages=pages, task_id="t1"
        )


def record_usage_and_a_paper(db_path) -> None:
    """Google usage from another crawl today, and one paper seen by an API too."""
    today = datetime.now(UTC).date().isoformat()
    conn = sqlite3.connect(db_path)
    with conn:
        conn.executemany(
            "INSERT INTO engine_usage (engine, date, usage_count) VALUES (?, ?, ?)",
            [("google", today, 7), ("google", "2000-01-01", 9)],
        )
        # The crawls stored one paper per DOI result (every fifth simulated result has one),
        # each seen on the SERP only; an API record of the first would make it `both`.
        conn.execute(
            "UPDATE papers SET attribution = 'both' WHERE id ="
            " (SELECT MIN(paper_id) FROM serp_items WHERE query_id = 2)"
        )
    conn.close()


@pytest_twisted.ensureDeferred
async def test_a_recrawl_counts_urls_stored_before_as_repeated(simulator, db_path):
    await crawl_twice(simulator, db_path, "Tidal  Energy")
    await run_crawl(simulator, db_path, query="wave power", engine="mojeek", serp_max_pages=1)
    record_usage_and_a_paper(db_path)

    async def read_back(backends):
        store = backends.store
        reports = [await query_report(store, i) for i in (1, 2, 3)]
        today = datetime.now(UTC).date()
        uses = await quota_use(backends.coordinator, load_config(), today)
        assert await store.query_ids(last=2) == [2, 3]
        assert await store.query_ids(task_id="t1") == [1, 2]
        return reports, {use.engine: use for use in uses}

    (first, second, other), quota = with_store(db_path, read_back)

    assert (first.items, first.new, first.repeated) == (20, 20, 0)
    assert (second.items, second.new, second.repeated) == (30, 10, 20)
    assert (other.new, other.repeated) == (10, 0)
    assert second.pages_per_source == {"mojeek": 3}
    assert second.stop_reasons == {"mojeek": "max_pages"}
    assert [page.novelty for page in second.pages] == [1.0, 1.0, 1.0]
    # Query 2 shows results 0..29 (DOIs at 0, 5, …, 25), query 1 results 0..19: the same papers.
    assert second.attribution == {"both": 1, "api_only": 0, "serp_only": 5}
    assert first.attribution == {"both": 1, "api_only": 0, "serp_only": 3}
    # The quota middleware counted every request of the three crawls: 2 + 3 + 1 pages.
    assert (quota["mojeek"].used, quota["mojeek"].daily_limit) == (6, None)
    assert (quota["google"].used, quota["google"].daily_limit) == (7, 10)
    assert quota["bing"].used == 0


@pytest_twisted.ensureDeferred
async def test_scrapy_report_prints_each_query_and_writes_one_html_page(
    simulator, db_path, tmp_path
):
    await crawl_twice(simulator, db_path, "tidal energy")
    record_usage_and_a_paper(db_path)
    page = tmp_path / "report.html"

    result = run_scrapy(
        "report", "--task", "t1", "--html", str(page), env={"LYRA_DB_PATH": str(db_path)}
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert "query 2: 'tidal energy' (task t1)" in result.stdout
    assert "items 30: 10 new, 20 repeated" in result.stdout
    assert "attribution both 1, api_only 0, serp_only 5" in result.stdout
    # SERP results with a DOI, no abstract: each paper is to be fetched from its DOI link.
    assert "evidence abstract 0, fetch 6 (no abstract 6)" in result.stdout
    assert "quota today: mojeek 5 (no daily limit)" in result.stdout
    assert "  google 7 (of 10)" in result.stdout
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<svg") == 3, "novelty and harvest per query, quota for the day"
    assert not re.search(r"<(script|link|img)\b|\bsrc=", html), "self-contained"
    assert "tidal energy" in html


@pytest.mark.subprocess
def test_scrapy_report_with_no_matching_query_exits_1(db_path):
    result = run_scrapy("report", "--last", "5", env={"LYRA_DB_PATH": str(db_path)})

    assert result.returncode == 1
    assert "error: no query matches" in result.stderr


def test_an_interrupted_crawl_is_reported_from_its_stored_pages(tmp_path):
    """A crawl killed mid-way never wrote its row's totals; the report counts what is stored."""

    async def store_one_page(backends):
        store = backends.store
        query_id = await store.start_query(QueryRecord("q", "q", "mojeek", 1, 3, "auto"))
        items = [
            ResultItem(
                f"https://a.example/{rank}",
                "t",
                query_id=query_id,
                source="mojeek",
                rank=rank,
                page_number=1,
                position=rank,
                normalized_url=f"https://a.example/{rank}",
            )
            for rank in (1, 2, 3)
        ]
        await store.store_page(PageRecord(query_id, "mojeek", 1, "ok", 3), items)
        return await query_report(store, query_id)

    report = with_store(tmp_path / "db.sqlite3", store_one_page)

    assert (report.status, report.items, report.new, report.repeated) == ("running", 3, 3, 0)
