"""Fetch a query's citation graph once its pages are stored, through the politeness chain.

When a query's every source has stopped and every page is stored, its papers are merged into
the paper index (closing.save_query_papers) and, with `-a citation_depth` above 0, its citation
graph is fetched before it closes: the references and citations of its top `citation_top_k`
papers with an abstract (by fused rank) at each of its sources that serves them (Semantic
Scholar, OpenAlex), then at depth 2 those of the top papers they reached (the plan:
lyra_crawl.papers.citation_crawl). Not for a query answered from the cache (its results'
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
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import Response
from twisted.python.failure import Failure

from lyra_crawl.backends.records import BackendError, CitationFetch, StoredPaper
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
from lyra_crawl.results import result_fields
from lyra_crawl.session.closing import save_query_papers
from lyra_crawl.session.judging import response_engine_url
from lyra_crawl.session.query import QuerySession
from lyra_crawl.session.request_state import (
    HANDLED_STATUSES,
    META_KEY,
    RequestKind,
    RequestRefused,
    RequestState,
    request_state,
)

if TYPE_CHECKING:
    from lyra_crawl.session.crawl import CrawlSession

logger = logging.getLogger(__name__)

# Answers that stop every request to their source: the source itself refuses or changed.
SOURCE_STOPS = frozenset({Outcome.LAYOUT_CHANGED})


class CitationFetcher:
    """The crawl's fetching of its queries' citation graphs (one per CrawlSession)."""

    def __init__(self, crawl: CrawlSession) -> None:
        self.crawl = crawl

    def sources(self, session: QuerySession) -> list[str]:
        """The query's sources that serve citation links."""
        config = self.crawl.config
        return [name for name in session.sources if link_api(config.engine(name)) is not None]

    def wanted(self, session: QuerySession) -> bool:
        """Whether the query fetches a citation graph once its pages are done."""
        return (
            session.citations is None
            and session.arguments.citation_depth > 0
            and not session.cache_hit
            and bool(self.sources(session))
        )

    async def begin(self, session: QuerySession) -> None:
        """Save the query's papers, then plan and send its first level."""
        arguments = session.arguments
        # Set before any wait: a second `settle` sees the graph under way.
        session.citations = CitationCrawl(
            depth=arguments.citation_depth, top_k=arguments.citation_top_k
        )
        store = self.crawl.store
        try:
            await save_query_papers(self.crawl, session)
            fetched = await store.citation_fetches(session.query_id)
            seeds = await store.citation_seeds(session.query_id, limit=arguments.citation_top_k)
        except BackendError as exc:
            self.crawl.backend_failed(exc, "the query's pages are stored")
            return
        done = {
            FetchKey(f.paper_id, f.source, Relation(f.relation))
            for f in fetched
            if f.status == DONE
        }
        await self._start_level(session, seeds, done)
        await self._go_on(session)

    # -- requests ----------------------------------------------------------------------------

    async def _start_level(
        self, session: QuerySession, papers: list[StoredPaper], done: set[FetchKey]
    ) -> None:
        citations = session.citations
        assert citations is not None
        level = citations.level + 1
        config = self.crawl.config
        requests = []
        for paper in papers:
            ids = PaperIds(paper.doi, paper.arxiv_id, paper.pmid, paper.external_ids)
            for source in self.sources(session):
                if all(FetchKey(paper.id, source, relation) in done for relation in Relation):
                    continue
                links = first_link_requests(
                    config.engine(source),
                    ids,
                    max_per_list=config.citations.max_per_list,
                    secrets=self.crawl.secrets,
                )
                requests += [CitationRequest(paper.id, level, source, link) for link in links]
        logger.info(
            "query %d: citation graph level %d: %d papers, %d first requests",
            session.query_id,
            level,
            len(papers),
            len(requests),
        )
        await self._record(session, citations.start_level(requests))

    def _send(self, session: QuerySession) -> None:
        citations = session.citations
        assert citations is not None
        for request in citations.take():
            self.crawl.crawler.engine.crawl(self._request(session, request))

    def _request(self, session: QuerySession, request: CitationRequest) -> Request:
        page = request.link.page
        state = RequestState(
            session.query_id,
            request.source,
            request.link.page_number,
            page.url,
            RequestKind.CITATION,
            citation=request,
        )
        return Request(
            route_to_simulator(page.url, request.source, self.crawl.simulator_url),
            headers=dict(page.headers),
            meta={
                META_KEY: state,
                "download_slot": request.source,
                "handle_httpstatus_list": HANDLED_STATUSES,
            },
            callback=self.answered,
            errback=self.failed,
            dont_filter=True,
        )

    async def _go_on(self, session: QuerySession) -> None:
        """Send what is due; when a level is over, start the next; when the last one is,
        let the query close."""
        citations = session.citations
        assert citations is not None
        while citations.idle and not citations.finished and not citations.advancing:
            citations.advancing = True
            try:
                frontier = await self.crawl.store.citation_frontier(
                    session.query_id, citations.level, limit=citations.top_k
                )
                await self._start_level(session, frontier, set())
            except BackendError as exc:
                self.crawl.backend_failed(exc, "the citation edges stored before are kept")
                return
            finally:
                citations.advancing = False
        if self.crawl.storage_failure is not None:
            return  # the crawl is closing: nothing more is sent or written
        if citations.finished:
            await self.crawl.settle(session)
        else:
            self._send(session)

    # -- answers -----------------------------------------------------------------------------

    async def answered(self, response: Response) -> list[Any]:
        """An answer: its papers and edges stored, its follow-ups queued."""
        state = request_state(response.meta)
        session = self.crawl.query(state.query_id) if state else None
        if state is None or state.citation is None or session is None or session.citations is None:
            return []  # its query has closed (the crawl is stopping)
        request = state.citation
        spec = self.crawl.config.engine(request.source)
        loop = asyncio.get_running_loop()
        page: LinkPage = await loop.run_in_executor(
            self.crawl.parser_thread,
            lambda: read_links(
                spec,
                request.link,
                response.body,
                status=response.status,
                url=response_engine_url(response, state, self.crawl.simulator_url),
                secrets=self.crawl.secrets,
            ),
        )
        self._count(request.source, "pages")
        if page.outcome is not Outcome.OK:
            ends = self._stopped(session, request, page)
        else:
            await self._store(session, request, page)
            ends = session.citations.answered(request, page.following)
        await self._record(session, ends)
        await self._go_on(session)
        return []

    def failed(self, failure: Failure) -> None:
        """A request that got no answer: refused by quota or breaker, or a network error."""
        request = failure.request  # type: ignore[attr-defined]
        state = request_state(request.meta)
        session = self.crawl.query(state.query_id) if state else None
        if state is None or state.citation is None or session is None or session.citations is None:
            return
        citation = state.citation
        # A timeout names the URL it waited for: never with a key in it, in logs or the store.
        spec = self.crawl.config.engine(citation.source)
        message = failure.getErrorMessage().replace(request.url, redact_secrets(spec, request.url))
        if failure.check(BackendError):
            self.crawl.backend_failed(failure.value, "the citation edges stored so far are kept")
            ends = session.citations.failed(citation, "error", message, source_stops=True)
        elif failure.check(RequestRefused):
            reason = failure.value.stop_reason
            logger.info(
                "query %d: %s refused the citation graph's requests (%s): its lists stop as %s",
                session.query_id,
                citation.source,
                message,
                reason,
            )
            ends = session.citations.failed(citation, reason, message, source_stops=True)
        else:
            logger.warning(
                "query %d: %s citation request %s failed: %s",
                session.query_id,
                citation.source,
                redact_secrets(spec, request.url),
                message,
            )
            self._count(citation.source, "network_error")
            ends = session.citations.failed(citation, "error", message, source_stops=False)
        self.crawl.run_later(self._after_failure(session, ends))

    async def _after_failure(self, session: QuerySession, ends: list[FetchEnd]) -> None:
        await self._record(session, ends)
        await self._go_on(session)

    def _stopped(
        self, session: QuerySession, request: CitationRequest, page: LinkPage
    ) -> list[FetchEnd]:
        """An answer that is not a list: a block or another shape stops the source, an error
        (an unknown paper, HTTP 5xx) ends the request's own lists."""
        citations = session.citations
        assert citations is not None
        url = redact_secrets(self.crawl.config.engine(request.source), request.link.page.url)
        if page.blocked or page.outcome in SOURCE_STOPS:
            status = "blocked" if page.blocked else page.outcome.value
            logger.warning(
                "query %d: %s answered %s with %s (%s): no more citation requests to it",
                session.query_id,
                request.source,
                url,
                page.outcome.value,
                page.detail,
            )
            return citations.failed(request, status, page.detail, source_stops=True)
        logger.info(
            "query %d: %s answered %s with %s (%s)",
            session.query_id,
            request.source,
            url,
            page.outcome.value,
            page.detail,
        )
        self._count(request.source, f"outcome/{page.outcome.value}")
        return citations.failed(request, page.outcome.value, page.detail, source_stops=False)

    async def _store(self, session: QuerySession, request: CitationRequest, page: LinkPage) -> None:
        """The answer's papers into the paper index, with their edges and the fetch's row."""
        for reason, count in page.dropped.items():
            self._count(request.source, f"dropped/{reason}", count)
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
            session.query_id,
            request.paper_id,
            request.source,
            request.link.relation.value,
            request.level,
            links=len(page.papers),
        )
        self._count(request.source, "links", len(page.papers))
        try:
            edges = await self.crawl.store.store_citation_page(
                fetch,
                index.papers(),
                min_abstract_chars=self.crawl.config.papers.min_abstract_chars,
            )
        except BackendError as exc:
            self.crawl.backend_failed(exc, "the citation edges stored before are kept")
            return
        self.crawl.stats.inc_value("lyra/citations/edges", edges)

    async def _record(self, session: QuerySession, ends: list[FetchEnd]) -> None:
        """The ended fetches' rows."""
        if not ends:
            return
        for end in ends:
            self.crawl.stats.inc_value(f"lyra/citations/fetch/{end.status}")
        rows = [
            CitationFetch(
                session.query_id,
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
            await self.crawl.store.end_citation_fetches(rows)
        except BackendError as exc:
            self.crawl.backend_failed(exc, "the citation edges stored before are kept")

    async def cancel(self, session: QuerySession) -> None:
        """The crawl closes before the graph is done: its open lists end `cancelled`."""
        if session.citations is not None and not session.citations.finished:
            await self._record(session, session.citations.cancel())

    def _count(self, engine: str, event: str, value: int = 1) -> None:
        self.crawl.stats.inc_value(f"lyra/citations/{engine}/{event}", value)
