"""The HTML reports are templates with autoescape: text from the store (a query, a batch file's
name, an entry's detail) is shown as text, never read as markup; the plots go in as SVG."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from lyra_crawl.records import BatchEntry, BatchProgress, BatchRecord
from lyra_crawl.reports.batch import BatchReport
from lyra_crawl.reports.batch_html import batch_report_html
from lyra_crawl.reports.html import report_html
from lyra_crawl.reports.text import QueryReport, QuotaUse

HOSTILE = "<script>alert('x')</script> & <b>bold</b>"
ESCAPED = "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;"


def hostile_query() -> QueryReport:
    return QueryReport(
        id=7,
        status="finished",
        query_text=HOSTILE,
        normalized_query=HOSTILE,
        engine="mojeek",
        serp_page=1,
        serp_max_pages=1,
        strategy="fixed",
        task_id="<task>",
        stop_reason={"mojeek": "max_pages"},
        attribution={"both": 0, "api_only": 0, "serp_only": 0},
        repeated=0,
        pages=[],
        started_at="2026-01-02T03:04:05+00:00",
    )


def assert_shown_as_text(html: str) -> None:
    assert HOSTILE not in html and "<script" not in html and "<b>" not in html
    assert ESCAPED in html
    assert not re.search(r"<(script|link|img|iframe)\b", html), "self-contained, no script"


def test_a_query_s_text_is_escaped_in_the_report_page():
    html = report_html([hostile_query()], [QuotaUse("mojeek", 3, 10)], generated_at="now")

    assert html.startswith("<!DOCTYPE html>")
    assert_shown_as_text(html)
    assert '<span class="muted">task &lt;task&gt;</span>' in html
    assert html.count("<svg") == 2, "the query's rates, the quota for the day"


def test_a_batch_s_file_name_and_entries_are_escaped_in_the_batch_page():
    record = BatchRecord(
        id=1, source=f"{HOSTILE}.yaml", content_hash="h", created_at="t", entries=1
    )
    failed = BatchEntry(
        id=1,
        batch_id=1,
        position=0,
        query_text=HOSTILE,
        arguments={},
        state="failed",
        detail=HOSTILE,
    )
    report = BatchReport(
        record=record,
        progress=BatchProgress(batch_id=1, entries={"failed": 1}),
        stop_reasons=[],
        blocks=[],
        quota=[],
        bucket_s=60,
        requests_over_time=[],
        depth=[],
        listed_entries=[failed],
        unsuccessful_entries=1,
        now=datetime.now(UTC),
    )

    html = batch_report_html(report, generated_at="now", queries=[hostile_query()])

    assert_shown_as_text(html)
    assert f"{ESCAPED}.yaml, recorded t" in html
    assert html.count("<svg") == 3 + 1, "the batch's plots, then the query's (no quota today)"
    assert "no quota use recorded" in html and "no block page" in html
