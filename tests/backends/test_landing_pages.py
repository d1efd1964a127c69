"""Landing pages in the store, on both backends (a real SQLite file, a real PostgreSQL): the
papers queued for a fetch with the page last asked for them, each page's outcome kept per paper
and URL, an abstract turning its paper to `evidence = abstract`, and a paper's pages following
it when its row is merged into another."""

from __future__ import annotations

from lyra_crawl.backends import Backends
from lyra_crawl.records import LandingPage
from tests.backends.test_paper_index import api, save_query

ABSTRACT = "Peat cores from six bogs show carbon accumulating faster after rewetting. " * 4


def test_pages_are_kept_per_paper_and_url_and_an_abstract_flips_its_paper(store):
    async def work(backends: Backends):
        db = backends.store
        query = await save_query(
            backends, "peat", api(title="Carbon in rewetted bogs", doi="10.5555/bog.1")
        )
        await save_query(backends, "other task", api(title="Unrelated fens"), task_id="t2")
        (queued,) = await db.papers_to_read(task_id="t1")
        url = queued.fetch_url
        blocked = LandingPage(queued.paper_id, url, "blocked", "HTTP 403", http_status=403)
        await db.record_landing_page(blocked, None)
        after_block = await db.papers_to_read(query_id=query)
        read = LandingPage(queued.paper_id, url, "abstract", "", 200, "citation_abstract")
        await db.record_landing_page(read, ABSTRACT)
        return (
            queued,
            after_block,
            await db.papers_to_read(task_id="t1"),
            await db.landing_pages(task_id="t1"),
            await db.papers_of(query),
        )

    queued, after_block, after_read, pages, (paper,) = store.run(work)

    # The API's own URL of the paper: its landing page (papers.evidence).
    assert queued.fetch_url == "https://peat.example/0"
    assert queued.fetch_urls["doi"] == "https://doi.org/10.5555/bog.1"
    assert (queued.last_url, queued.last_outcome) == (None, None)
    assert [(p.last_url, p.last_outcome) for p in after_block] == [(queued.fetch_url, "blocked")]
    assert after_read == []  # read: no longer queued
    (page,) = pages
    assert (page.outcome, page.metadata_field, page.http_status, page.attempts) == (
        "abstract",
        "citation_abstract",
        200,
        2,
    )
    assert (paper.abstract, paper.evidence, paper.fetch_url) == (ABSTRACT, "abstract", None)


def test_a_papers_pages_follow_it_when_its_row_is_merged_into_another(store):
    async def work(backends: Backends):
        db = backends.store
        title = "Carbon in rewetted bogs"
        await save_query(backends, "journal", api(title=title, doi="10.5555/bog.1", year=2021))
        await save_query(
            backends, "preprint", api(title=title, source="arxiv", arxiv_id="1804.01234", year=2018)
        )
        queued = await db.papers_to_read(task_id="t1")
        for paper in queued:
            await db.record_landing_page(
                LandingPage(paper.paper_id, paper.fetch_url, "no_metadata"), None
            )
        # A record with both identifiers makes the two rows one.
        both = await save_query(
            backends, "both", api(title=title, doi="10.5555/bog.1", arxiv_id="1804.01234")
        )
        return queued, await db.landing_pages(task_id="t1"), await db.papers_of(both)

    queued, pages, (paper,) = store.run(work)

    assert len(queued) == 2
    assert {page.url for page in pages} == {q.fetch_url for q in queued}
    assert {page.paper_id for page in pages} == {paper.id}
