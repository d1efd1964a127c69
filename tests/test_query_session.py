"""RunningQuery: what a batch crawl's many queries cost once they are closed."""

from __future__ import annotations

import gc
import weakref

from lyra_crawl.items import ResultItem
from lyra_crawl.paging.relevance import RelevanceConfig
from lyra_crawl.paging.source_paging import SourcePaging
from lyra_crawl.paging.stop_rules import PaginationConfig, PaginationStrategy
from lyra_crawl.query.arguments import CrawlArguments
from lyra_crawl.records import PageRecord
from lyra_crawl.results import SerpResult
from lyra_crawl.session.running_query import RunningQuery


def _session() -> RunningQuery:
    arguments = CrawlArguments(
        query="graph neural networks",
        engine="mojeek",
        serp_page=1,
        serp_max_pages=3,
        strategy="fixed",
        time_range=None,
        region=None,
        task_id=None,
        job_id=None,
    )
    paging = SourcePaging.start(
        arguments.query, RelevanceConfig(), first_page=1, page_cap=3, pagination_enabled=True
    )
    return RunningQuery(
        arguments=arguments,
        query_id=7,
        engine="mojeek",
        sources=["mojeek"],
        pagination=PaginationStrategy(PaginationConfig(serp_max_pages=3, strategy="fixed")),
        paging={"mojeek": paging},
        start_pages={},
        cache_key="key",
    )


def _item(position: int) -> ResultItem:
    result = SerpResult(url=f"https://example.org/{position}", title=f"Result {position}")
    return ResultItem.place(
        result, query_id=7, source="mojeek", kind="serp", page_number=1, position=position
    )


def test_a_page_is_handed_over_once_whole() -> None:
    session = _session()
    session.ledger.open_page(PageRecord(7, "mojeek", 1, "ok", 2), expected=2)
    session.ledger.keep("mojeek", 1, _item(1))
    assert not session.has_completed_pages
    session.ledger.keep("mojeek", 1, _item(2))
    [page] = session.take_completed_pages()
    assert [item.position for item in page.items] == [1, 2]
    assert not session.has_completed_pages
    assert session.take_completed_pages() == []


def test_a_closed_query_is_freed_without_the_cycle_collector() -> None:
    # A batch crawl opens and closes thousands of queries: one whose state sits in a reference
    # cycle waits, with its papers and seen URLs, for the collector's next full scan.
    session = _session()
    session.ledger.open_page(PageRecord(7, "mojeek", 1, "ok", 1), expected=1)
    session.ledger.keep("mojeek", 1, _item(1))
    session.take_completed_pages()
    freed = weakref.ref(session)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del session
        assert freed() is None
    finally:
        if collecting:
            gc.enable()
