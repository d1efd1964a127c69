"""Fetch a query's citation graph once its pages are stored, through the politeness chain.

When a query's every source has stopped and every page is stored (lyra_crawl.session.settling),
its papers are merged into the paper index (closing.save_query_papers) and, with
`-a citation_depth` above 0, its citation graph is fetched before it closes: the references and
citations of its top `citation_top_k` papers with an abstract (by fused rank) at each of its
sources that serves them (Semantic Scholar, OpenAlex), then at depth 2 those of the top papers
they reached (the plan: lyra_crawl.papers.citation_crawl); when the graph is done, it closes
its query (lyra_crawl.session.closing.finish). Not for a query answered from the cache (its results'
graph was fetched with them); a resumed query skips the lists it fetched whole before.

Each request is an ordinary lyra request (RequestKind.CITATION): engine turn, breaker, daily
quota and rate slot admit it like a results page, block detection judges it, so a spent quota
or an open breaker stops the graph's requests to that source cleanly (its lists end `quota` or
`blocked`, the rest goes on). Each answer is read on the parser thread
(engines.citations.read_links) and stored in one transaction: the papers at the other end
enter the paper index (merged into stored papers where they match), with an edge each, and the
list's `citation_fetches` row. Stats: `lyra/citations/<engine>/pages`, `…/links`,
`…/dropped/<reason>`, `lyra/citations/fetch/<status>`, `lyra/citations/edges`.
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

from scrapy import Request
from scrapy.http import Response
from twisted.python.failure import Failure

from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.citation_links import LinkPage, PaperIds, Relation
from lyra_crawl.engines.citations import first_link_requests, link_api, read_links
from lyra_crawl.engines.request import redact_secrets
from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.papers.canonical import CanonicalPaperIndex, PaperRecord
from lyra_crawl.papers.citation_crawl import (
    DONE,
    CitationCrawl,
    CitationRequest,
    FetchEnd,
    FetchKey,
)
from lyra_crawl.records import BackendError, CitationFetch, StoredPaper
from lyra_crawl.results import result_fields
from lyra_crawl.session.closing import finish, save_query_papers
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.judging import response_engine_url
from lyra_crawl.session.request_state import (
    HANDLED_STATUSES,
    META_KEY,
    RequestKind,
    RequestRefused,
    RequestState,
    request_state,
)
from lyra_crawl.session.running_query import RunningQuery

logger = logging.getLogger(__name__)

# Answers that stop every request to their source: the source itself refuses or changed.
SOURCE_STOPS = frozenset({Outcome.LAYOUT_CHANGED})


def sources(crawl: CrawlSession, query: RunningQuery) -> list[str]:
    """The query's sources that serve citation links."""
    config = crawl.config
    return [name for name in query.sources if link_api(config.engine(name)) is not None]


def wanted(crawl: CrawlSession, query: RunningQuery) -> bool:
    """Whether the query fetches a citation graph once its pages are done."""
    return (
        query.citations is None
        and query.arguments.citation_depth > 0
        and not query.cache_hit
        and bool(sources(crawl, query))
    )


async def begin(crawl: CrawlSession, query: RunningQuery) -> None:
    """Save the query's papers, then plan and send its first level."""
    arguments = query.arguments
    # Set before any wait: a second `settle` sees the graph under way.
    query.citations = CitationCrawl(depth=arguments.citation_depth, top_k=arguments.citation_top_k)
    store = crawl.store
    try:
        await save_query_papers(crawl, query)
        fetched = await store.citation_fetches(query.query_id)
        seeds = await store.citation_seeds(query.query_id, limit=arguments.citation_top_k)
    except BackendError as exc:
        crawl.backend_failed(exc, "the query's pages are stored")
        return
    done = {
        FetchKey(f.paper_id, f.source, Relation(f.relation)) for f in fetched if f.status == DONE
    }
    await _start_level(crawl, query, seeds, done)
    await _go_on(crawl, query)


# -- requests ----------------------------------------------------------------------------


async def _start_level(
    crawl: CrawlSession, query: RunningQuery, papers: list[StoredPaper], done: set[FetchKey]
) -> None:
    citations = query.citations
    assert citations is not None
    level = citations.level + 1
    config = crawl.config
    requests = []
    for paper in papers:
        ids = PaperIds(paper.doi, paper.arxiv_id, paper.pmid, paper.external_ids)
        for source in sources(crawl, query):
            if all(FetchKey(paper.id, source, relation) in done for relation in Relation):
                continue
            links = first_link_requests(
                config.engine(source),
                ids,
                max_per_list=config.citations.max_per_list,
                secrets=crawl.secrets,
            )
            requests += [CitationRequest(paper.id, level, source, link) for link in links]
    logger.info(
        "query %d: citation graph level %d: %d papers, %d first requests",
        query.query_id,
        level,
        len(papers),
        len(requests),
    )
    await _record(crawl, query, citations.start_level(requests))


def _send(crawl: CrawlSession, query: RunningQuery) -> None:
    citations = query.citations
    assert citations is not None
    for request in citations.take():
        crawl.crawler.engine.crawl(_request(crawl, query, request))


def _request(crawl: CrawlSession, query: RunningQuery, request: CitationRequest) -> Request:
    page = request.link.page
    state = RequestState(
        query.query_id,
        request.source,
        request.link.page_number,
        page.url,
        RequestKind.CITATION,
        citation=request,
    )
    return Request(
        route_to_simulator(page.url, request.source, crawl.simulator_url),
        headers=dict(page.headers),
        meta={
            META_KEY: state,
            "download_slot": request.source,
            "handle_httpstatus_list": HANDLED_STATUSES,
        },
        callback=partial(_answered, crawl),
        errback=partial(_failed, crawl),
        dont_filter=True,
    )


async def _go_on(crawl: CrawlSession, query: RunningQuery) -> None:
    """Send what is due; when a level is over, start the next; when the last one is,
    let the query close."""
    citations = query.citations
    assert citations is not None
    while citations.idle and not citations.finished and not citations.advancing:
        citations.advancing = True
        try:
            frontier = await crawl.store.citation_frontier(
                query.query_id, citations.level, limit=citations.top_k
            )
            await _start_level(crawl, query, frontier, set())
        except BackendError as exc:
            crawl.backend_failed(exc, "the citation edges stored before are kept")
            return
        finally:
            citations.advancing = False
    if crawl.storage_failure is not None:
        return  # the crawl is closing: nothing more is sent or written
    if citations.finished:
        if query.done:  # not when the crawl closes it meanwhile
            await finish(crawl, query)
    else:
        _send(crawl, query)


# -- answers -----------------------------------------------------------------------------


async def _answered(crawl: CrawlSession, response: Response) -> list[Any]:
    """An answer: its papers and edges stored, its follow-ups queued."""
    state = request_state(response.meta)
    query = crawl.query(state.query_id) if state else None
    if state is None or state.citation is None or query is None or query.citations is None:
        return []  # its query has closed (the crawl is stopping)
    request = state.citation
    spec = crawl.config.engine(request.source)
    loop = asyncio.get_running_loop()
    page: LinkPage = await loop.run_in_executor(
        crawl.parser_thread,
        lambda: read_links(
            spec,
            request.link,
            response.body,
            status=response.status,
            url=response_engine_url(response, state, crawl.simulator_url),
            secrets=crawl.secrets,
        ),
    )
    _count(crawl, request.source, "pages")
    if page.outcome is not Outcome.OK:
        ends = _stopped(crawl, query, request, page)
    else:
        await _store(crawl, query, request, page)
        ends = query.citations.answered(request, page.following)
    await _record(crawl, query, ends)
    await _go_on(crawl, query)
    return []


def _failed(crawl: CrawlSession, failure: Failure) -> None:
    """A request that got no answer: refused by quota or breaker, or a network error."""
    request = failure.request  # type: ignore[attr-defined]
    state = request_state(request.meta)
    query = crawl.query(state.query_id) if state else None
    if state is None or state.citation is None or query is None or query.citations is None:
        return
    citation = state.citation
    # A timeout names the URL it waited for: never with a key in it, in logs or the store.
    spec = crawl.config.engine(citation.source)
    message = failure.getErrorMessage().replace(request.url, redact_secrets(spec, request.url))
    if failure.check(BackendError):
        crawl.backend_failed(failure.value, "the citation edges stored so far are kept")
        ends = query.citations.failed(citation, "error", message, source_stops=True)
    elif failure.check(RequestRefused):
        reason = failure.value.stop_reason
        logger.info(
            "query %d: %s refused the citation graph's requests (%s): its lists stop as %s",
            query.query_id,
            citation.source,
            message,
            reason,
        )
        ends = query.citations.failed(citation, reason, message, source_stops=True)
    else:
        logger.warning(
            "query %d: %s citation request %s failed: %s",
            query.query_id,
            citation.source,
            redact_secrets(spec, request.url),
            message,
        )
        _count(crawl, citation.source, "network_error")
        ends = query.citations.failed(citation, "error", message, source_stops=False)
    crawl.run_later(_after_failure(crawl, query, ends))


async def _after_failure(crawl: CrawlSession, query: RunningQuery, ends: list[FetchEnd]) -> None:
    await _record(crawl, query, ends)
    await _go_on(crawl, query)


def _stopped(
    crawl: CrawlSession, query: RunningQuery, request: CitationRequest, page: LinkPage
) -> list[FetchEnd]:
    """An answer that is not a list: a block or another shape stops the source, an error
    (an unknown paper, HTTP 5xx) ends the request's own lists."""
    citations = query.citations
    assert citations is not None
    url = redact_secrets(crawl.config.engine(request.source), request.link.page.url)
    if page.blocked or page.outcome in SOURCE_STOPS:
        status = "blocked" if page.blocked else page.outcome.value
        logger.warning(
            "query %d: %s answered %s with %s (%s): no more citation requests to it",
            query.query_id,
            request.source,
            url,
            page.outcome.value,
            page.detail,
        )
        return citations.failed(request, status, page.detail, source_stops=True)
    logger.info(
        "query %d: %s answered %s with %s (%s)",
        query.query_id,
        request.source,
        url,
        page.outcome.value,
        page.detail,
    )
    _count(crawl, request.source, f"outcome/{page.outcome.value}")
    return citations.failed(request, page.outcome.value, page.detail, source_stops=False)


async def _store(
    crawl: CrawlSession, query: RunningQuery, request: CitationRequest, page: LinkPage
) -> None:
    """The answer's papers into the paper index, with their edges and the fetch's row."""
    for reason, count in page.dropped.items():
        _count(crawl, request.source, f"dropped/{reason}", count)
    if not page.papers:
        return
    index = CanonicalPaperIndex()
    index.add_many(
        PaperRecord(
            source=request.source,
            kind="api",
            url=found.url,
            title=found.title,
            **result_fields(found),
        )
        for found in page.papers
    )
    fetch = CitationFetch(
        query.query_id,
        request.paper_id,
        request.source,
        request.link.relation.value,
        request.level,
        links=len(page.papers),
    )
    _count(crawl, request.source, "links", len(page.papers))
    try:
        edges = await crawl.store.store_citation_page(
            fetch,
            index.papers(),
            min_abstract_chars=crawl.config.papers.min_abstract_chars,
        )
    except BackendError as exc:
        crawl.backend_failed(exc, "the citation edges stored before are kept")
        return
    crawl.stats.inc_value("lyra/citations/edges", edges)


async def _record(crawl: CrawlSession, query: RunningQuery, ends: list[FetchEnd]) -> None:
    """The ended fetches' rows."""
    if not ends:
        return
    for end in ends:
        crawl.stats.inc_value(f"lyra/citations/fetch/{end.status}")
    rows = [
        CitationFetch(
            query.query_id,
            end.key.paper_id,
            end.key.source,
            end.key.relation.value,
            end.level,
            status=end.status,
            detail=end.detail,
        )
        for end in ends
    ]
    try:
        await crawl.store.end_citation_fetches(rows)
    except BackendError as exc:
        crawl.backend_failed(exc, "the citation edges stored before are kept")


async def cancel(crawl: CrawlSession, query: RunningQuery) -> None:
    """The crawl closes before the graph is done: its open lists end `cancelled`."""
    if query.citations is not None and not query.citations.finished:
        await _record(crawl, query, query.citations.cancel())


def _count(crawl: CrawlSession, engine: str, event: str, value: int = 1) -> None:
    crawl.stats.inc_value(f"lyra/citations/{engine}/{event}", value)
