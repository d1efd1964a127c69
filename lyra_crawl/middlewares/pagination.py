"""Pagination stop: decide after each page whether the next one is worth a request.

A spider middleware. It sees one page's output (its SerpItems and the proposed next-page
request), scores each result's relevance against the query (lyra_crawl.paging.relevance),
computes the page's novelty rate against every URL already seen for the query in this crawl
(and, with `-a novelty_scope=history`, stored by earlier crawls of the same normalized query)
and its harvest rate, and asks `PaginationStrategy.should_fetch_next`
(lyra_crawl.paging.stop_rules). When the answer is stop it drops the proposed request and
records the reason.

Governed by the spider arguments `strategy`, `serp_max_pages`, `novelty_scope` and by the
`pagination:` section of engines.yaml (min_novelty_rate, min_harvest_rate, relevance_threshold).
Stats: `lyra/stop_reason/<reason>`, `lyra/<source>/novelty_stop` etc.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.urls import normalize_url
from lyra_crawl.items import SerpItem
from lyra_crawl.paging.relevance import RelevanceScorer, harvest_rate
from lyra_crawl.paging.stop_rules import PageContext, calculate_novelty_rate

logger = logging.getLogger(__name__)


@dataclass
class _SourceState:
    scorer: RelevanceScorer
    seen_urls: set[str] = field(default_factory=set)


class PaginationMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self._sources: dict[str, _SourceState] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PaginationMiddleware:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        # The callback is lazy: it has set the page's outcome only once its output is drained.
        outputs = [output async for output in result]
        meta = response.meta if response is not None else {}
        if "lyra_outcome" not in meta:
            for output in outputs:
                yield output
            return
        source = meta["lyra_source"]
        items = [o for o in outputs if isinstance(o, SerpItem)]
        is_next_page = [
            isinstance(o, Request) and o.meta.get("lyra_source") == source for o in outputs
        ]
        keep_next_page = self._should_continue(meta, items)
        for output, next_page in zip(outputs, is_next_page, strict=True):
            if keep_next_page or not next_page:
                yield output

    def _state(self, source: str) -> _SourceState:
        state = self._sources.get(source)
        if state is None:
            spider = self.crawler.spider
            state = _SourceState(scorer=RelevanceScorer(spider.arguments.query, spider.relevance))
            if spider.arguments.novelty_scope == "history":
                state.seen_urls.update(spider.storage.earlier_urls(spider.query_id))
            self._sources[source] = state
        return state

    def _should_continue(self, meta: dict[str, Any], items: list[SerpItem]) -> bool:
        spider = self.crawler.spider
        source = meta["lyra_source"]
        page_number = meta["lyra_page"]
        outcome = Outcome(meta["lyra_outcome"])
        state = self._state(source)
        for item in items:
            item.normalized_url = normalize_url(item.url)  # the pipelines reuse it
        urls = [item.normalized_url for item in items]
        novelty = calculate_novelty_rate(urls, state.seen_urls)
        state.seen_urls.update(urls)
        scores = state.scorer.score_page([(item.title, item.snippet) for item in items])
        for item, score in zip(items, scores, strict=True):
            item.relevance = round(score, 4)
        harvest = harvest_rate(scores, spider.relevance.threshold) if items else 0.0
        spider.pages.annotate(source, page_number, novelty_rate=novelty, harvest_rate=harvest)
        decision = spider.pagination.should_fetch_next(
            PageContext(
                page_number=page_number,
                serp_page=spider.arguments.serp_page,
                results_on_page=len(items),
                novelty_rate=novelty,
                harvest_rate=harvest,
                blocked=outcome.is_block,
                error=outcome is Outcome.ERROR,
                engine_max_pages=spider.page_cap(source),
            )
        )
        logger.debug("%s page %d: %s", source, page_number, decision.detail)
        if decision.fetch_next:
            return True
        spider.record_stop(source, decision.reason.value, decision.detail)
        return False
