"""One timed crawl process for the crawl benchmarks: K queries x M pages, `serp` or a bare spider.

`python -m benchmarks.crawl_runner serp|bare SIMULATOR_URL DB_PATH QUERY_FILE PAGES` prints
the pages fetched and the seconds taken, as JSON. Both kinds run K crawlers in one process, each
paging one query one page at a time, so the only difference is lyra_crawl's own work. `serp`
crawls Mojeek unless --engine names another, with the config in --config-dir when given.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
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


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("serp", "bare"))
    parser.add_argument("simulator_url")
    parser.add_argument("db_path")
    parser.add_argument("query_file", help="one query per line")
    parser.add_argument("pages", type=int)
    parser.add_argument("--strategy", default="fixed")
    parser.add_argument("--engine", default="mojeek")
    parser.add_argument("--config-dir")
    args = parser.parse_args(argv)
    queries = Path(args.query_file).read_text(encoding="utf-8").splitlines()
    settings = Settings()
    settings.setmodule("lyra_crawl.settings", priority="project")
    settings.update(
        {
            "LYRA_SIMULATOR_URL": args.simulator_url,
            "LYRA_DB_PATH": args.db_path,
            "LYRA_RATE_LIMIT_ENABLED": False,
            "LYRA_CONFIG_DIR": args.config_dir,
            "LOG_LEVEL": "ERROR",
        },
        priority="cmdline",
    )
    if args.kind == "bare":
        settings.set("ITEM_PIPELINES", {}, priority="cmdline")
    process = CrawlerProcess(settings, install_root_handler=False)
    crawlers = []
    for query in queries:
        if args.kind == "serp":
            crawler = process.create_crawler(SerpSpider)
            process.crawl(
                crawler,
                query=query,
                engine=args.engine,
                serp_max_pages=args.pages,
                strategy=args.strategy,
                cache="off",
                sources="serp",  # the engine alone: the same pages the bare spider fetches
            )
        else:
            crawler = process.create_crawler(BareMojeekSpider)
            process.crawl(crawler, simulator_url=args.simulator_url, query=query, pages=args.pages)
        crawlers.append(crawler)
    started = time.perf_counter()
    process.start()
    seconds = time.perf_counter() - started
    fetched = sum(c.stats.get_value("response_received_count", 0) for c in crawlers)
    print(json.dumps({"pages": fetched, "seconds": seconds}))


def run_crawls(
    kind: str,
    simulator_url: str,
    db_path: Path,
    queries: list[str],
    pages: int,
    strategy: str = "fixed",
    engine: str = "mojeek",
    config_dir: Path | None = None,
) -> dict[str, float]:
    """Run main() in a fresh process (one reactor per process) and return its figures."""
    query_file = db_path.with_suffix(".queries")
    query_file.write_text("\n".join(queries), encoding="utf-8")
    output = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.crawl_runner",
            kind,
            simulator_url,
            str(db_path),
            str(query_file),
            str(pages),
            "--strategy",
            strategy,
            "--engine",
            engine,
            *(["--config-dir", str(config_dir)] if config_dir else []),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def pages_per_second(
    kind: str, simulator_url: str, db_path: Path, queries: list[str], pages: int, **options: Any
) -> float:
    """Pages/s of run_crawls(...); every page asked for must have been fetched."""
    measured = run_crawls(kind, simulator_url, db_path, queries, pages, **options)
    if measured["pages"] != len(queries) * pages:
        expected = len(queries) * pages
        raise RuntimeError(f"{kind} fetched {measured['pages']} pages, expected {expected}")
    return measured["pages"] / measured["seconds"]


def median_figures(
    prefix: str, ratio_name: str, speeds: dict[str, list[float]]
) -> dict[str, float]:
    """Median pages/s per kind as `prefix.kind`, and the first kind's over the second's."""
    medians = {kind: statistics.median(values) for kind, values in speeds.items()}
    first, second = medians.values()
    return {
        **{f"{prefix}.{kind}": value for kind, value in medians.items()},
        ratio_name: first / second,
    }


if __name__ == "__main__":
    main(sys.argv[1:])
