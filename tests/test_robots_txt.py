"""robots.txt obeyed for every request to a host, those that wait for its robots.txt included:
a crawl starting with several pages of one host asks none that robots.txt disallows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest_twisted
import requests
import scrapy
from scrapy.crawler import CrawlerRunner
from scrapy.http import Response
from scrapy.utils.defer import deferred_from_coro

from lyra_crawl.simulator.corpus import make_result
from tests.conftest import assert_no_errors, crawl_settings, logged_errors

QUERY = "peatland carbon"
# The simulator's robots.txt disallows each query's paper 19; the others are allowed.
PAPERS = (3, 7, 11, 15, 19, 23)


class LandingPages(scrapy.Spider):
    """Asks for the landing pages of PAPERS at once, robots.txt obeyed."""

    name = "landing_pages"
    custom_settings = {"ROBOTSTXT_OBEY": True}

    def __init__(self, simulator_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.simulator_url = simulator_url

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for number in PAPERS:
            path = urlsplit(make_result(QUERY, number, on_topic=True).landing_url).path
            yield scrapy.Request(f"{self.simulator_url}/landing{path}", callback=self.read)

    def read(self, response: Response) -> None:
        pass


@pytest_twisted.ensureDeferred
async def test_pages_waiting_for_robots_txt_are_checked_against_it(simulator, db_path):
    requests.get(f"{simulator.url}/mojeek/search", params={"q": QUERY}, timeout=10)
    runner = CrawlerRunner(crawl_settings(simulator, db_path))
    crawler = runner.create_crawler(LandingPages)

    with logged_errors() as errors:
        await deferred_from_coro(crawler.crawl_async(simulator_url=simulator.url))

    assert_no_errors(crawler, errors)
    asked = [entry["path"].rsplit("/", 1)[-1] for entry in simulator.requests("landing")]
    assert sorted(map(int, asked)) == [n for n in PAPERS if n != 19]
    assert crawler.stats.get_value("robotstxt/forbidden") == 1
