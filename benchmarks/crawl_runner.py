"""One timed crawl process for the crawl benchmarks: K queries x M pages, `serp` or a bare spider.

`python -m benchmarks.crawl_runner serp|bare SIMULATOR_URL DB_PATH QUERY_FILE PAGES` prints
the pages fetched and the seconds taken, as JSON. QUERY_FILE holds one `engine<TAB>query` per
line; the engines must be HTML engines paged by URL formula. Both kinds run ONE crawler
fetching the same simulator pages with the same policy: each
query one page at a time, and one request in flight per engine (a download slot of concurrency
1 per engine, as lyra's politeness keeps it). So the only difference is lyra_crawl's own work:
`serp` runs the queries as a stored batch (`-a batch=ID -a concurrency=K`), the bare spider as K
chains of requests whose URLs lyra's own URL builder gives, keeping nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.settings import Settings

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.config import load_config
from lyra_crawl.engines.request import build_page_request
from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.records import EntrySpec
from lyra_crawl.spiders.serp import SerpSpider

Query = tuple[str, str]  # (engine, query)


class BareSpider(scrapy.Spider):
    """The baseline: fetch the same simulator pages, one chain per query, and yield each
    result's URL and title with the first XPath of each rule of the engine's current layout,
    as a plain Scrapy spider would; nothing is checked, scored, merged or stored.

    One request in flight per engine is kept here, by sending an engine's next page only when
    its previous answer is in: a download slot of concurrency 1 does not hold it, because
    Scrapy 2.19 counts a request as transferring only once its download coroutine runs, so a
    slot's queue can start several at once.
    """

    name = "bare"

    def __init__(
        self,
        simulator_url: str,
        queries: Sequence[Query],
        pages: int,
        config_dir: str | None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.simulator_url = simulator_url
        self.pages = pages
        self.config = load_config(config_dir)
        # Per engine, the pages still to fetch, in turn across its queries.
        self.waiting: dict[str, deque[tuple[str, int]]] = {}
        for engine, query in queries:
            self.waiting.setdefault(engine, deque()).append((query, 1))

    async def start(self):
        for engine in self.waiting:
            yield self._next(engine)

    def _next(self, engine: str) -> scrapy.Request:
        query, page = self.waiting[engine].popleft()
        built = build_page_request(self.config.engine(engine), query, page)
        return scrapy.Request(
            route_to_simulator(built.url, engine, self.simulator_url),
            cb_kwargs={"engine": engine, "query": query, "page": page},
            meta={"download_slot": engine},
            dont_filter=True,
        )

    def parse(self, response, engine: str, query: str, page: int):
        layout = self.config.engine(engine).parse[0]  # the current one
        for node in response.xpath(layout.results[0]):
            yield {
                "url": node.xpath(layout.url[0]).get(),
                "title": node.xpath(layout.title[0]).get(),
            }
        if page < self.pages:
            self.waiting[engine].append((query, page + 1))
        if self.waiting[engine]:
            yield self._next(engine)


def record_batch(settings: Settings, queries: Sequence[Query], arguments: dict[str, str]) -> int:
    """The queries as a stored batch of `serp` entries; returns its id."""
    specs = [
        EntrySpec(position, query, {"query": query, "engine": engine, **arguments})
        for position, (engine, query) in enumerate(queries, start=1)
    ]

    async def record(backends: Backends) -> int:
        batch = await backends.store.create_batch(
            source="benchmark", content_hash=str(time.time()), entries=specs
        )
        return batch.id

    return run_sync(with_backends(settings, record))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("serp", "bare"))
    parser.add_argument("simulator_url")
    parser.add_argument("db_path")
    parser.add_argument("query_file", help="one engine<TAB>query per line")
    parser.add_argument("pages", type=int)
    parser.add_argument("--strategy", default="fixed")
    parser.add_argument("--config-dir")
    args = parser.parse_args(argv)
    lines = Path(args.query_file).read_text(encoding="utf-8").splitlines()
    queries = [tuple(line.split("\t", 1)) for line in lines]
    settings = Settings()
    settings.setmodule("lyra_crawl.settings", priority="project")
    settings.update(
        {
            "LYRA_SIMULATOR_URL": args.simulator_url,
            "LYRA_DB_PATH": args.db_path,
            # Limits off: the figures compare lyra_crawl's own work, not the engines' pace.
            "LYRA_RATE_LIMIT_ENABLED": False,
            "LYRA_QUOTA_ENABLED": False,
            "LYRA_CONFIG_DIR": args.config_dir,
            "LOG_LEVEL": "ERROR",
        },
        priority="cmdline",
    )
    if args.kind == "bare":
        engines = {engine for engine, _ in queries}
        slots = {engine: {"concurrency": 1, "delay": 0.0} for engine in engines}
        settings.set("DOWNLOAD_SLOTS", slots, priority="cmdline")
        settings.set("ITEM_PIPELINES", {}, priority="cmdline")
    # Settings are copied when the process is made: everything is set before.
    process = CrawlerProcess(settings, install_root_handler=False)
    if args.kind == "serp":
        arguments = {
            "serp_max_pages": str(args.pages),
            "strategy": args.strategy,
            "cache": "off",
            "sources": "serp",  # the engine alone: the same pages the bare spider fetches
        }
        batch_id = record_batch(settings, queries, arguments)
        crawler = process.create_crawler(SerpSpider)
        process.crawl(crawler, batch=str(batch_id), concurrency=str(len(queries)))
    else:
        crawler = process.create_crawler(BareSpider)
        process.crawl(
            crawler,
            simulator_url=args.simulator_url,
            queries=queries,
            pages=args.pages,
            config_dir=args.config_dir,
        )
    started = time.perf_counter()
    process.start()
    seconds = time.perf_counter() - started
    fetched = crawler.stats.get_value("response_received_count", 0)
    print(json.dumps({"pages": fetched, "seconds": seconds}))


def run_crawls(
    kind: str,
    simulator_url: str,
    db_path: Path,
    queries: Sequence[Query],
    pages: int,
    strategy: str = "fixed",
    config_dir: Path | None = None,
) -> dict[str, float]:
    """Run main() in a fresh process (one reactor per process) and return its figures."""
    query_file = db_path.with_suffix(".queries")
    query_file.write_text("\n".join(f"{e}\t{q}" for e, q in queries), encoding="utf-8")
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
            *(["--config-dir", str(config_dir)] if config_dir else []),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def pages_per_second(
    kind: str,
    simulator_url: str,
    db_path: Path,
    queries: Sequence[Query],
    pages: int,
    **options: Any,
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
