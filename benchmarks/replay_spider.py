"""A bare Scrapy spider replaying the requests a batch sent, for CPU per request side by side.

`python -m benchmarks.replay_spider SIMULATOR_URL PLAN_JSON CONFIG_DIR OUT_JSON`: PLAN_JSON is
the simulator's request log (engine, method, path, params per request). Each request is sent
again (POST as a form), one in flight per engine as lyra sends them, and each result's URL and
title are yielded with the first XPath of each rule of the engine's current layout (JSON
answers are only decoded); nothing is checked, scored or stored. Writes
{"responses": N, "items": M} to OUT_JSON; a callback that fails ends it without a figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import scrapy
from scrapy.crawler import CrawlerProcess

from lyra_crawl.config import load_config


class ReplaySpider(scrapy.Spider):
    name = "replay"

    def __init__(self, simulator_url: str, plan: list[dict[str, Any]], config_dir: str, **kw):
        super().__init__(**kw)
        self.simulator_url = simulator_url
        self.plan = plan
        self.config = load_config(config_dir)

    async def start(self):
        for entry in self.plan:
            url = f"{self.simulator_url}/{entry['engine']}{entry['path']}"
            meta = {"download_slot": entry["engine"], "engine": entry["engine"]}
            if entry["method"] == "POST":
                yield scrapy.FormRequest(url, formdata=entry["params"], meta=meta, dont_filter=True)
            else:
                query = f"?{urlencode(entry['params'])}" if entry["params"] else ""
                yield scrapy.Request(url + query, meta=meta, dont_filter=True)

    def parse(self, response):
        spec = self.config.engine(response.meta["engine"])
        if spec.family == "json":
            json.loads(response.body or b"null")
        if spec.family != "html":
            return
        layout = spec.parse[0]  # the current one
        for node in response.xpath(layout.results[0]):
            yield {
                "url": node.xpath(layout.url[0]).get(),
                "title": node.xpath(layout.title[0]).get(),
            }


def main(argv: list[str]) -> None:
    simulator_url, plan_path, config_dir, out = argv
    plan = json.loads(Path(plan_path).read_text())
    engines = {entry["engine"] for entry in plan}
    process = CrawlerProcess(
        {
            "LOG_LEVEL": "ERROR",
            "TELNETCONSOLE_ENABLED": False,
            "ROBOTSTXT_OBEY": False,
            "CONCURRENT_REQUESTS": 32,
            "DOWNLOAD_SLOTS": {engine: {"concurrency": 1, "delay": 0.0} for engine in engines},
            "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        },
        install_root_handler=False,
    )
    crawler = process.create_crawler(ReplaySpider)
    process.crawl(crawler, simulator_url=simulator_url, plan=plan, config_dir=config_dir)
    process.start()
    stats = crawler.stats
    failed = stats.get_value("spider_exceptions/count", 0) if stats else 0
    if failed:
        # A baseline whose callback fails does less work than it should: no figure from it.
        raise SystemExit(f"the replay spider's callback failed on {failed} responses")
    figures = {
        "responses": stats.get_value("response_received_count", 0) if stats else 0,
        "items": stats.get_value("item_scraped_count", 0) if stats else 0,
    }
    Path(out).write_text(json.dumps(figures))


if __name__ == "__main__":
    main(sys.argv[1:])
