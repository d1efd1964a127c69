"""Hand kept items to their query's page ledger; each page is stored whole once every item of
it is kept or dropped, and the query closes once its last page is stored."""

from __future__ import annotations

from typing import Any, Self

from scrapy import signals
from scrapy.crawler import Crawler

from lyra_crawl.pipelines import ResultPipeline
from lyra_crawl.session.running_query import RunningQuery
from lyra_crawl.session.settling import settle


class StorePipeline(ResultPipeline):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        pipeline = super().from_crawler(crawler)
        crawler.signals.connect(pipeline.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(pipeline.item_error, signal=signals.item_error)
        return pipeline

    def process_item(self, item: Any) -> Any:
        query = self.query_of(item)
        if query is not None:
            query.ledger.keep(item.source, item.page_number, item)
            if query.has_completed_pages:
                # The page is complete: the item is done once the page is stored.
                return self._settled(query, item)
        return item

    async def _settled(self, query: RunningQuery, item: Any) -> Any:
        await settle(self.session, query)
        return item

    async def item_dropped(self, item: Any, **_: Any) -> None:
        query = self.query_of(item)
        if query is not None:
            query.ledger.drop(item.source, item.page_number)
            await settle(self.session, query)

    async def item_error(self, item: Any, **_: Any) -> None:
        query = self.query_of(item)
        if query is not None:
            self.stats.inc_value("lyra/dropped/pipeline_error")
            query.ledger.drop(item.source, item.page_number)
            await settle(self.session, query)
