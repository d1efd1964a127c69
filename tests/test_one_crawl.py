"""Many queries in one crawl: a batch is one process, one crawler, one store connection and at
most one browser driver, and it stores what the same queries crawled one by one store."""

from __future__ import annotations

import gc
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import CrawlerRunner
from scrapy.utils.defer import deferred_from_coro

from tests.conftest import (
    assert_no_errors,
    crawl_settings,
    logged_errors,
    query_db,
    run_crawl,
    start_scrapy,
)

# Rotating fixed engines (the same engine in both runs); a few queries add a paper API, and
# two render in Chromium (Google), so the batch needs the browser handler.
ENGINES = ("mojeek", "duckduckgo", "wikipedia", "startpage", "arxiv")


def batch_queries(count: int) -> list[dict[str, Any]]:
    queries = []
    for n in range(count):
        entry: dict[str, Any] = {"query": f"tidal marsh {n}", "engine": ENGINES[n % len(ENGINES)]}
        if n % 10 == 3:
            entry["sources"] = ["serp", "openalex"]
        queries.append(entry)
    queries[7]["engine"] = queries[150]["engine"] = "google"
    return queries


def write_batch(path: Path, queries: list[dict[str, Any]]) -> None:
    lines = ["defaults: {serp_max_pages: 2, sources: [serp], strategy: fixed}", "queries:"]
    for entry in queries:
        extra = f", sources: [{', '.join(entry['sources'])}]" if "sources" in entry else ""
        lines.append(f"  - {{query: '{entry['query']}', engine: {entry['engine']}{extra}}}")
    path.write_text("\n".join(lines) + "\n")


class ProcessWatch:
    """Samples a process's children and its open files of one database while it runs."""

    def __init__(self, pid: int, db_path: Path) -> None:
        self.pid = pid
        self.db_path = str(db_path)
        self.most_db_files = 0
        self.most_drivers = 0
        self.most_python_children = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(0.05)

    def _sample(self) -> None:
        try:
            fds = os.listdir(f"/proc/{self.pid}/fd")
        except FileNotFoundError:
            return
        files = []
        for fd in fds:
            try:
                files.append(os.readlink(f"/proc/{self.pid}/fd/{fd}"))
            except OSError:
                continue
        self.most_db_files = max(self.most_db_files, files.count(self.db_path))
        children = [cmdline(pid) for pid in child_pids(self.pid)]
        drivers = [c for c in children if "playwright" in c]
        python = [c for c in children if Path(c.split(" ")[0]).name.startswith("python")]
        self.most_drivers = max(self.most_drivers, len(drivers))
        self.most_python_children = max(self.most_python_children, len(python))


def child_pids(parent: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            # The parent pid is the 2nd field after the command, which may hold spaces.
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(int(entry))
    return pids


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def stored(db_path: Path) -> dict[str, Any]:
    """Each query's pages and items, by query text, without ids or times.

    A URL or DOI two sources of one query both show is stored once, for the source whose page
    arrived first; that order differs from run to run, so for queries with several sources the
    items are compared as the set of what identifies them (DOI, else URL), and the pages
    without their kept-item counts.
    """
    result: dict[str, Any] = {}
    for query in query_db(db_path, "SELECT id, query_text, status, stop_reason FROM queries"):
        pages = query_db(
            db_path,
            "SELECT source, page_number, outcome, results, items_stored FROM serp_pages"
            " WHERE query_id = ? ORDER BY source, page_number",
            (query["id"],),
        )
        items = query_db(
            db_path,
            "SELECT source, page_number, rank, normalized_url, title, doi FROM serp_items"
            " WHERE query_id = ? ORDER BY source, rank",
            (query["id"],),
        )
        several = len({page["source"] for page in pages}) > 1
        result[query["query_text"]] = (
            query["status"],
            query["stop_reason"],
            [tuple(page)[: 4 if several else 5] for page in pages],
            sorted(item["doi"] or item["normalized_url"] for item in items)
            if several
            else [tuple(item) for item in items],
        )
    return result


@pytest.mark.long
@pytest_twisted.ensureDeferred
async def test_a_batch_of_200_queries_is_one_crawl_storing_what_200_crawls_store(
    simulator, tmp_path
):
    queries = batch_queries(200)
    batch_file = tmp_path / "batch.yaml"
    write_batch(batch_file, queries)
    batch_db = tmp_path / "batch.sqlite3"
    env = {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_DB_PATH": str(batch_db),
        "LYRA_RATE_LIMIT_ENABLED": "false",
    }

    process = start_scrapy("batch", str(batch_file), "--concurrency", "20", env=env)
    with ProcessWatch(process.pid, batch_db) as watch:
        _, log = process.communicate(timeout=600)
    assert process.returncode == 0, log[-3000:]

    assert log.count("Spider opened") == 1, "one crawler for the whole batch"
    assert " ERROR: " not in log, log[-3000:]
    assert watch.most_python_children == 0, "one process"
    assert watch.most_db_files == 1, "one connection serves the store and the coordinator"
    assert watch.most_drivers == 1, "one Playwright driver for the two Google queries"

    single_db = tmp_path / "single.sqlite3"
    for entry in queries:
        sources = ",".join(entry.get("sources", ["serp"]))
        await run_crawl(
            simulator,
            single_db,
            query=entry["query"],
            engine=entry["engine"],
            sources=sources,
            serp_max_pages=2,
            strategy="fixed",
        )

    in_batch, one_by_one = stored(batch_db), stored(single_db)
    assert len(in_batch) == 200
    assert in_batch == one_by_one


class PlainSpider(scrapy.Spider):
    """A spider that is not lyra's: plain requests and dict items through lyra's chain."""

    name = "plain"

    def __init__(self, simulator_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.simulator_url = simulator_url

    async def start(self):
        for n in range(3):
            yield scrapy.Request(
                f"{self.simulator_url}/mojeek/search?q=plain+{n}",
                meta={"download_slot": "mojeek"},
                dont_filter=True,
            )

    def parse(self, response):
        yield {"url": response.url, "results": len(response.xpath("//li"))}


@pytest_twisted.ensureDeferred
async def test_another_spider_runs_through_lyras_chain_untouched(simulator, db_path):
    settings = crawl_settings(simulator, db_path, LYRA_RATE_LIMIT_ENABLED=True)
    crawler = CrawlerRunner(settings).create_crawler(PlainSpider)

    with logged_errors() as errors:
        await deferred_from_coro(crawler.crawl_async(simulator_url=simulator.url))

    assert_no_errors(crawler, errors)
    assert crawler.stats.get_value("item_scraped_count") == 3
    assert len(simulator.requests("mojeek")) == 3
    assert query_db(db_path, "SELECT COUNT(*) AS n FROM queries")[0]["n"] == 0
    assert query_db(db_path, "SELECT COUNT(*) AS n FROM engine_usage")[0]["n"] == 0


@pytest_twisted.ensureDeferred
async def test_a_crawl_gives_what_it_froze_back_to_the_collector(simulator, db_path):
    """The session freezes what is alive when its spider opens (gc.freeze: the collector's full
    passes held up the reactor); a process that crawls again and again (CrawlerRunner in a
    service) must get each crawl's objects back to the collector once it is over, or their
    reference cycles would never be freed."""
    crawler = await run_crawl(
        simulator, db_path, query="frozen tundra", engine="mojeek", serp_max_pages=1
    )

    assert crawler.stats.get_value("item_scraped_count", 0) > 0
    assert gc.get_freeze_count() == 0
