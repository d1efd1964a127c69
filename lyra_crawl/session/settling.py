"""Move a query on after anything of it changed: its complete pages stored; once every source
has stopped and every page is stored, its citation graph fetched when it has one to fetch
(lyra_crawl.session.citations); once nothing of it is left, closed (lyra_crawl.session.closing).

Called by whatever may have completed a page or stopped a source: the pagination middleware, the
store pipeline, the launch; the citation graph closes its query itself when it is done.
"""

from __future__ import annotations

from lyra_crawl.session import citations
from lyra_crawl.session.closing import finish
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.running_query import RunningQuery


async def settle(crawl: CrawlSession, query: RunningQuery) -> None:
    """Store the query's complete pages; once they are all stored, fetch its citation graph if
    it has one to fetch; close it once nothing of it is left."""
    await crawl.store_completed_pages(query)
    if query.paging_over and crawl.storage_failure is None and citations.wanted(crawl, query):
        await citations.begin(crawl, query)
        return  # it closes when the graph is done
    if query.done:
        await finish(crawl, query)


def settle_later(crawl: CrawlSession, query: RunningQuery) -> None:
    """`settle` from a place that cannot await (an errback)."""
    crawl.run_later(settle(crawl, query))
