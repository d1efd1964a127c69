"""Item pipelines: normalise -> canonical merge -> drop duplicates -> store page by page.

Each acts on lyra's ResultItems only and finds the item's query through the CrawlSession; other
items pass untouched. Settings: ITEM_PIPELINES wires them (settings.py). Drops are counted in
Scrapy stats under `lyra/dropped/<reason>`.

The canonical merge sees every result before duplicates are dropped: the Semantic Scholar
record of a paper whose URL a SERP result already showed is not stored as a row of its own, but
it is what makes that paper `both` and gives it its metadata.
"""

from __future__ import annotations

from typing import Self

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from lyra_crawl.items import ResultItem
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.running_query import RunningQuery


class ResultPipeline:
    """Base: the crawl session, and the query of an item."""

    def __init__(self, session: CrawlSession) -> None:
        self.session = session
        self.stats = session.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(CrawlSession.of(crawler))

    def query_of(self, item: object) -> RunningQuery | None:
        """The running query of a lyra item; None for anything else."""
        return self.session.query(item.query_id) if isinstance(item, ResultItem) else None

    def drop(self, item: ResultItem, reason: str, message: str) -> DropItem:
        self.stats.inc_value(f"lyra/dropped/{reason}")
        return DropItem(f"{message}: {item.url}", log_level="DEBUG")
