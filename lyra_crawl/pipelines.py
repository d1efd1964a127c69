"""Item pipelines: normalise -> drop duplicates within the query -> store page by page.

Settings: ITEM_PIPELINES wires them (see settings.py). Drops are counted in Scrapy stats under
`lyra/dropped/<reason>`; stored pages and items under `lyra/<source>/pages_stored` and
`lyra/<source>/items_stored`.
"""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from lyra_crawl.items import SerpItem
from lyra_crawl.urls import is_web_url, normalize_url


class _Pipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> _Pipeline:
        return cls(crawler)

    def drop(self, item: SerpItem, reason: str, message: str) -> DropItem:
        self.stats.inc_value(f"lyra/dropped/{reason}")
        return DropItem(f"{message}: {item.url}", log_level="DEBUG")


class NormalizePipeline(_Pipeline):
    """Fill normalized_url; drop results whose URL is not a web address."""

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, SerpItem):
            return item
        if not is_web_url(item.url):
            raise self.drop(item, "not_http", "not an http(s) URL")
        item.normalized_url = normalize_url(item.url)
        return item


class DedupePipeline(_Pipeline):
    """Drop results already seen for this query; rank the rest by first appearance."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.seen: dict[int, set[str]] = {}
        self.next_rank: dict[tuple[int, str], int] = {}

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, SerpItem):
            return item
        spider = self.crawler.spider
        # A resumed crawl goes on from what its stored pages hold (empty otherwise).
        seen = self.seen.setdefault(item.query_id, set(spider.stored_urls))
        if item.normalized_url in seen:
            raise self.drop(item, "duplicate_url", "duplicate within the query")
        seen.add(item.normalized_url)
        key = (item.query_id, item.source)
        item.rank = self.next_rank.get(key, spider.stored_ranks.get(item.source, 0)) + 1
        self.next_rank[key] = item.rank
        return item


class StorePipeline(_Pipeline):
    """Hand kept items to the spider's page ledger, which writes whole pages to storage."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        pipeline = cls(crawler)
        crawler.signals.connect(pipeline.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(pipeline.item_error, signal=signals.item_error)
        return pipeline

    def process_item(self, item: Any) -> Any:
        if isinstance(item, SerpItem):
            self.crawler.spider.pages.keep(
                item.source, item.page_number, ItemAdapter(item).asdict()
            )
        return item

    def item_dropped(self, item: Any, **_: Any) -> None:
        if isinstance(item, SerpItem):
            self.crawler.spider.pages.drop(item.source, item.page_number)

    def item_error(self, item: Any, **_: Any) -> None:
        if isinstance(item, SerpItem):
            self.stats.inc_value("lyra/dropped/pipeline_error")
            self.crawler.spider.pages.drop(item.source, item.page_number)
