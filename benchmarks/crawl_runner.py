"""One timed crawl process for bench_crawl: K queries x M pages, `serp` or a bare spider.

`python -m benchmarks.crawl_runner serp|bare SIMULATOR_URL DB_PATH QUERIES PAGES` prints the
pages fetched and the seconds taken, as JSON. Both kinds run K crawlers in one process, each
paging one query one page at a time, so the only difference is lyra_crawl's own work.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings

from lyra_crawl.spiders.serp import SerpSpider


class BareMojeekSpider(scrapy.Spider):
    """The baseline: fetch the same simulator pages, follow `s`, keep nothing."""

    name = "bare"

    def __init__(self, simulator_url: str, query: str, pages: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = f"{simulator_url}/mojeek/search"
        self.query = query
        self.pages = pages

    async def start(self):
        yield scrapy.Request(f"{self.base}?q={self.query}", cb_kwargs={"page": 1})

    def parse(self, response, page: int):
        yield {"links": len(response.xpath("//ul[@class='results-standard']/li"))}
        if page < self.pages:
            following = page + 1
            yield scrapy.Request(
                f"{self.base}?q={self.query}&s={(following - 1) * 10 + 1}",
                cb_kwargs={"page": following},
            )


def main(kind: str, simulator_url: str, db_path: str, queries: int, pages: int) -> None:
    settings = Settings()
    settings.setmodule("lyra_crawl.settings", priority="project")
    settings.update(
        {
            "LYRA_SIMULATOR_URL": simulator_url,
            "LYRA_DB_PATH": db_path,
            "LYRA_RATE_LIMIT_ENABLED": False,
            "LOG_LEVEL": "ERROR",
        },
        priority="cmdline",
    )
    if kind == "bare":
        settings.set("ITEM_PIPELINES", {}, priority="cmdline")
    process = CrawlerProcess(settings, install_root_handler=False)
    crawlers = []
    for number in range(queries):
        query = f"benchmark query {number}"
        if kind == "serp":
            crawler = process.create_crawler(SerpSpider)
            process.crawl(crawler, query=query, engine="mojeek", serp_max_pages=pages)
        else:
            crawler = process.create_crawler(BareMojeekSpider)
            process.crawl(crawler, simulator_url=simulator_url, query=query, pages=pages)
        crawlers.append(crawler)
    started = time.perf_counter()
    process.start()
    seconds = time.perf_counter() - started
    fetched = sum(c.stats.get_value("response_received_count", 0) for c in crawlers)
    print(json.dumps({"pages": fetched, "seconds": seconds}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
