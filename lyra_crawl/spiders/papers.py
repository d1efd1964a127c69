"""PapersSpider: read the abstracts of a task's or a query's papers from their landing pages.

Arguments: `-a task_id=T` or `-a query_id=N` (lyra_crawl.query.papers_target.parse_papers_target);
Scrapyd's `_job` is accepted. Settings: LYRA_PAPERS_DAILY_BUDGET, the pages all papers crawls
sharing the Coordinator may ask for in a UTC day; `papers.min_abstract_chars` in engines.yaml;
and, set for this spider (`-s` overrides them), Scrapy's own politeness: ROBOTSTXT_OBEY,
AUTOTHROTTLE_* (per host), DOWNLOAD_DELAY, CONCURRENT_REQUESTS_PER_DOMAIN.

`start` takes from the store the papers the task's queries (or the query) found that are
queued for a fetch (`evidence = fetch`) and, for each one whose page is due
(lyra_crawl.papers.landing_fetch), takes one unit of the day's budget and asks for its page.
`read` reads the abstract from the page's metadata (lyra_crawl.papers.landing); `failed` says
why there is no page (robots.txt, 404, a block, a network error). Either way the store keeps
the page's outcome (`landing_pages`), and an abstract turns the paper to `evidence = abstract`.
Counted under `lyra/papers/outcome/<outcome>`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http import HtmlResponse, Request, Response
from scrapy.settings import BaseSettings
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from lyra_crawl.engines.request import identifying_user_agent
from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.papers.landing import LandingOutcome, read_abstract
from lyra_crawl.papers.landing_fetch import is_due, outcome_of_status, page_to_read
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.query.papers_target import PapersTarget, parse_papers_budget, parse_papers_target
from lyra_crawl.records import BackendError, LandingPage, PaperToRead
from lyra_crawl.session.crawl import CrawlSession

logger = logging.getLogger(__name__)

META_KEY = "lyra_landing"
# The daily budget's key in the Coordinator's quotas, beside the engines'.
BUDGET_KEY = "landing_pages"
# The simulator serves every publisher's pages under this engine name.
SIMULATOR_ENGINE = "landing"
# What Scrapy's RobotsTxtMiddleware says when robots.txt disallows a page.
ROBOTS_REFUSAL = "Forbidden by robots.txt"
HTML_TYPES = (b"text/html", b"application/xhtml+xml")


@dataclass(frozen=True)
class LandingRequest:
    """What one request of the spider is for: the paper, and its page's URL before routing."""

    paper_id: int
    url: str


class PapersSpider(scrapy.Spider):
    name = "papers"
    # Publishers' pages are other people's sites: robots.txt is obeyed, each host is paced by
    # AutoThrottle from its own answers (never faster than DOWNLOAD_DELAY), two at a time.
    custom_settings = {
        "ROBOTSTXT_OBEY": True,
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 2.0,
        "AUTOTHROTTLE_MAX_DELAY": 60.0,
        "AUTOTHROTTLE_TARGET_CONCURRENCY": 1.0,
        "DOWNLOAD_DELAY": 1.0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    }

    def __init__(self, *, target: PapersTarget, budget: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target = target
        self.budget = budget

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """Introduce the crawler as what it is, so robots.txt rules for it apply."""
        super().update_settings(settings)
        contact = settings.get("LYRA_CONTACT_EMAIL") or ""
        agent = identifying_user_agent("lyra_crawl-papers", contact)
        settings.set("USER_AGENT", agent, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> PapersSpider:
        spider = cls(
            target=parse_papers_target(kwargs),
            budget=parse_papers_budget(crawler.settings.get("LYRA_PAPERS_DAILY_BUDGET")),
        )
        spider._set_crawler(crawler)
        crawler.signals.connect(spider.headers_received, signal=signals.headers_received)
        return spider

    @cached_property
    def session(self) -> CrawlSession:
        # Extensions are built after the spider: looked up on first use, not in from_crawler.
        return CrawlSession.of(self.crawler)

    async def start(self) -> AsyncIterator[Any]:
        try:
            papers = await self.session.store.papers_to_read(
                task_id=self.target.task_id, query_id=self.target.query_id
            )
            logger.info("%d papers queued for a fetch", len(papers))
            for paper in papers:
                url = page_to_read(paper.fetch_url, paper.fetch_urls)
                if url is None:
                    self._count("no_url")
                elif not is_due(url, paper.last_url, paper.last_outcome):
                    self._count("already_read")
                elif await self._take_budget():
                    yield self._request(paper, url)
                else:
                    return
        except BackendError as exc:
            self.session.backend_failed(exc, "the landing pages read before are stored")

    async def _take_budget(self) -> bool:
        """One unit of the day's budget, or False (said once) when it is spent."""
        day = utc_date()
        if await self.session.coordinator.reserve_quota(BUDGET_KEY, day, self.budget):
            return True
        logger.warning(
            "daily budget spent: %d landing pages asked for on %s (UTC); the rest wait for "
            "tomorrow, or raise LYRA_PAPERS_DAILY_BUDGET",
            self.budget,
            day,
        )
        self._count("budget_spent")
        return False

    def read(self, response: Response) -> None:
        asked: LandingRequest = response.meta[META_KEY]
        if not isinstance(response, HtmlResponse):
            kind = response.headers.get("Content-Type", b"").decode("latin-1") or "no type"
            self._record(asked, LandingOutcome.NOT_HTML, f"not an HTML page ({kind})", response)
            return
        found = read_abstract(response.selector, min_chars=self.min_abstract_chars)
        self._record(asked, found.outcome, found.detail, response, found.field, found.abstract)

    def failed(self, failure: Failure) -> None:
        request: Request = failure.request  # type: ignore[attr-defined]
        asked: LandingRequest = request.meta[META_KEY]
        if failure.check(HttpError):
            response = failure.value.response
            outcome = outcome_of_status(response.status)
            self._record(asked, outcome, f"HTTP {response.status}", response)
        elif failure.check(IgnoreRequest) and str(failure.value) == ROBOTS_REFUSAL:
            self._record(asked, LandingOutcome.ROBOTS_DISALLOWED, "robots.txt disallows it")
        else:
            detail = f"{type(failure.value).__name__}: {failure.value}"
            self._record(asked, LandingOutcome.NETWORK_ERROR, detail)

    def headers_received(self, headers: Any, body_length: int, request: Request) -> None:
        """Stop a download that is not an HTML page (a PDF) once its headers say so."""
        if META_KEY in request.meta:
            kind = headers.get("Content-Type") or b""
            if kind and not kind.lower().startswith(HTML_TYPES):
                raise StopDownload(fail=False)

    @cached_property
    def min_abstract_chars(self) -> int:
        return self.session.config.papers.min_abstract_chars

    def _request(self, paper: PaperToRead, url: str) -> Request:
        return Request(
            route_to_simulator(url, SIMULATOR_ENGINE, self.session.simulator_url),
            callback=self.read,
            errback=self.failed,
            meta={META_KEY: LandingRequest(paper.paper_id, url)},
            # Two papers may share a page; each is read for itself.
            dont_filter=True,
        )

    def _record(
        self,
        asked: LandingRequest,
        outcome: LandingOutcome,
        detail: str,
        response: Response | None = None,
        field: str | None = None,
        abstract: str | None = None,
    ) -> None:
        self._count(f"outcome/{outcome.value}")
        page = LandingPage(
            paper_id=asked.paper_id,
            url=asked.url,
            outcome=outcome.value,
            detail=detail,
            http_status=response.status if response is not None else None,
            metadata_field=field,
        )
        self.session.run_later(self._store(page, abstract))

    async def _store(self, page: LandingPage, abstract: str | None) -> None:
        try:
            await self.session.store.record_landing_page(page, abstract)
        except BackendError as exc:
            self.session.backend_failed(exc, "the landing pages read before are stored")

    def _count(self, event: str) -> None:
        self.crawler.stats.inc_value(f"lyra/papers/{event}")
