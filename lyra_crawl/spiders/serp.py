"""SerpSpider: start a crawl's queries, turn each page into items, propose the next page.

Arguments (`-a name=value`): either one query — query (required), engine, serp_page,
serp_max_pages, strategy, time_range, region, task_id, sources, cache, novelty_scope,
harvest_rate, resume, citation_depth, citation_top_k — or a stored batch: batch=ID and
concurrency=N (the batch is recorded by `scrapy batch FILE`). Scrapyd's `_job` is accepted
either way. Settings: see the README (LYRA_*); the CrawlSession extension reads them.

The spider does three things. `start` opens the queries (lyra_crawl.session.launch: engine
choice, resume, cache) and sends each one's first pages. `parse` turns a page into items and
proposes the page after it, from the URL formula or from the page's own next-page form; whether
that page is worth a request is the pagination middleware's decision, made from the page's
PageOutcome. `failed` hands a request that could not be fetched to the same middleware's rules.
Pages of `render: browser` engines are rendered in Chromium (lyra_crawl.browser) and parsed
like any other.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from functools import cached_property
from typing import Any

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import FormRequest, Request, Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from lyra_crawl.browser.render import browser_meta, install_browser, render_schemes
from lyra_crawl.config import EngineSpec, load_config
from lyra_crawl.engines.base import Outcome, PageRequest, ParseResult
from lyra_crawl.engines.request import (
    ensure_engine_host,
    redact_secrets,
    with_credentials,
    with_query,
)
from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.items import ResultItem
from lyra_crawl.middlewares.pagination import stop_after_failure, stop_with_pages_stored
from lyra_crawl.query.arguments import LaunchPlan, SingleQuery, parse_launch
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.judging import judge, response_engine_url
from lyra_crawl.session.launch import launch
from lyra_crawl.session.page_outcome import PageOutcome
from lyra_crawl.session.request_state import (
    HANDLED_STATUSES,
    META_KEY,
    RequestKind,
    RequestState,
    request_state,
)
from lyra_crawl.session.running_query import RunningQuery


class SerpSpider(scrapy.Spider):
    name = "serp"

    def __init__(self, *, plan: LaunchPlan, browser_enabled: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.browser_enabled = browser_enabled

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """One download slot per engine: concurrency 1, no delay or jitter.

        Pacing is the rate limit's, shared through the Coordinator; a slot delay would pace
        this process only, on top of it.
        """
        super().update_settings(settings)
        config = load_config(settings.get("LYRA_CONFIG_DIR"))
        slots = dict(settings.getdict("DOWNLOAD_SLOTS"))
        for name in config.policies:
            slots.setdefault(name, {"concurrency": 1, "delay": 0.0, "jitter": 0})
        settings.set("DOWNLOAD_SLOTS", slots, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SerpSpider:
        settings = crawler.settings
        config = load_config(settings.get("LYRA_CONFIG_DIR"))
        plan = parse_launch(kwargs, config)
        browser_enabled = settings.getbool("LYRA_BROWSER_ENABLED")
        spider = cls(plan=plan, browser_enabled=browser_enabled)
        spider._set_crawler(crawler)
        if browser_enabled:
            # Settings are still open here; crawls that render nothing never load Playwright.
            engine = plan.arguments.engine if isinstance(plan, SingleQuery) else None
            schemes = render_schemes(config, engine, settings.get("LYRA_SIMULATOR_URL"))
            if schemes:
                install_browser(settings, schemes)
        return spider

    @cached_property
    def session(self) -> CrawlSession:
        # Extensions are built after the spider: looked up on first use, not in from_crawler.
        return CrawlSession.of(self.crawler)

    async def start(self) -> AsyncIterator[Any]:
        async for opened in launch(self.session, self.plan):
            for item in opened.replay:
                yield item
            for source in opened.pages_stored:
                stop_with_pages_stored(opened.query, source)
            for plan in opened.first_pages:
                yield self._request(opened.query, plan.spec, plan.page, plan.page_number, plan.kind)

    def parse(self, response: Response) -> list[Any]:
        """One page's items, its PageOutcome and the proposed next-page request.

        A list, not a generator: Scrapy inspects the source of every generator callback for a
        `return value` on each call, which costs more than the whole page's parsing.
        """
        state = request_state(response.meta)
        query = self.session.query(state.query_id) if state else None
        if state is None or query is None:
            return []  # its query has closed (the crawl is stopping)
        spec = self.session.config.engine(state.engine)
        result = state.take_verdict() or judge(
            spec, response, state, query, self.session.simulator_url
        )
        outcome = PageOutcome(
            query_id=query.query_id,
            source=spec.name,
            page_number=state.page_number,
            outcome=result.outcome,
            detail=result.detail,
            results=len(result.results),
            url=redact_secrets(
                spec, response_engine_url(response, state, self.session.simulator_url)
            ),
            kind=state.kind,
            dropped=result.dropped,
        )
        if state.kind is RequestKind.TOKEN_PAGE:
            return self._after_token_page(query, spec, result, outcome)
        if result.follow_up is not None:
            # The page is complete only with the follow-up's answer, parsed here in turn.
            follow_up = with_credentials(spec, result.follow_up, self.session.secrets)
            return [self._request(query, spec, follow_up, state.page_number, RequestKind.FOLLOW_UP)]
        kind = "api" if spec.scholarly else "serp"
        outputs: list[Any] = [
            ResultItem.place(
                found,
                query_id=query.query_id,
                source=spec.name,
                kind=kind,
                page_number=state.page_number,
                position=position,
            )
            for position, found in enumerate(result.results, start=1)
        ]
        following = self._next_page(query, spec, result, state.page_number)
        if isinstance(following, str):
            outcome = replace(outcome, no_next_page=following)
        outputs.append(outcome)
        if isinstance(following, Request):
            outputs.append(following)
        return outputs

    def failed(self, failure: Failure) -> None:
        """A request that got no response: refused by a politeness rule, or a network error."""
        request = failure.request  # type: ignore[attr-defined]
        state = request_state(request.meta)
        query = self.session.query(state.query_id) if state else None
        if state is not None and query is not None:
            stop_after_failure(self.session, query, state, failure)

    # -- requests ------------------------------------------------------------------------

    def _after_token_page(
        self, query: RunningQuery, spec: EngineSpec, result: ParseResult, outcome: PageOutcome
    ) -> list[Any]:
        """The token page's outcome, and page `serp_page` requested with its fields."""
        if result.outcome is not Outcome.OK:
            return [outcome]
        first = query.first_page
        page = self.session.page_request(query, spec, first, dict(result.tokens))
        return [outcome, self._request(query, spec, page, first, RequestKind.PAGE)]

    def _next_page(
        self, query: RunningQuery, spec: EngineSpec, result: ParseResult, page_number: int
    ) -> Request | str | None:
        """The request for the following page if the engine can give one, or why it cannot."""
        if result.outcome is not Outcome.OK or page_number >= spec.max_pages:
            return None
        following = page_number + 1
        if spec.next_page == "form":
            if result.next_request is None:
                return f"page {page_number} has no next-page form"
            page = with_query(spec, result.next_request, query.arguments.query)
        else:
            page = self.session.page_request(query, spec, following)
        ensure_engine_host(spec, page.url, query.arguments.region)
        return self._request(query, spec, page, following, RequestKind.PAGE)

    def _request(
        self,
        query: RunningQuery,
        spec: EngineSpec,
        page: PageRequest,
        page_number: int,
        kind: RequestKind,
    ) -> Request:
        url = route_to_simulator(page.url, spec.name, self.session.simulator_url)
        meta: dict[str, Any] = {
            META_KEY: RequestState(query.query_id, spec.name, page_number, page.url, kind),
            "download_slot": spec.name,
            "handle_httpstatus_list": HANDLED_STATUSES,
        }
        if spec.render == "browser" and self.browser_enabled:
            meta.update(browser_meta(spec))
        common = {
            "meta": meta,
            "headers": dict(page.headers),
            "callback": self.parse,
            "errback": self.failed,
            "dont_filter": True,
        }
        if page.method == "POST":
            return FormRequest(url, formdata=list(page.formdata or ()), **common)
        return Request(url, **common)
