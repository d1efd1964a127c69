"""Scrapy's log formatter, without the per-response and per-item lines LOG_LEVEL would hide.

Scrapy builds a DEBUG record for every response ("Crawled (200)") and every item ("Scraped
from"), and only the handler drops it; in a batch of thousands of queries that is a few percent
of the process's CPU. Returning None for them is the LogFormatter's documented way to log
nothing.
"""

from __future__ import annotations

import logging
from typing import Any, Self

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.http import Request, Response
from scrapy.logformatter import LogFormatter, LogFormatterResult
from twisted.python.failure import Failure


class LevelAwareLogFormatter(LogFormatter):
    def __init__(self, *, debug: bool = True) -> None:
        super().__init__()
        self._debug = debug

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        level = crawler.settings.get("LOG_LEVEL", "DEBUG")
        if isinstance(level, str):  # a name ("INFO"); Scrapy also takes the number itself
            level = logging.getLevelName(level.upper())
        return cls(debug=not isinstance(level, int) or level <= logging.DEBUG)

    def crawled(
        self, request: Request, response: Response, spider: Spider
    ) -> LogFormatterResult | None:
        return super().crawled(request, response, spider) if self._debug else None

    def scraped(
        self, item: Any, response: Response | Failure | None, spider: Spider
    ) -> LogFormatterResult | None:
        return super().scraped(item, response, spider) if self._debug else None
