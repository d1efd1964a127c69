"""`scrapy crawl`, with lyra's spiders' arguments, config and backends checked before the crawl.

A wrong argument, setting, config file or store URL ends the run with one `error:` line naming
the problem and the fix, exit status 2, and no request sent: `serp`'s arguments
(query.arguments.parse_launch); `papers`' task or query, which the store must hold, and its
daily budget; a store or coordinator other than the one the job was scheduled for
(LYRA_EXPECT_DB, LYRA_EXPECT_COORDINATION: lyra_crawl.batch.targets), a missing URL included, so
that no node falls back to a file or quotas of its own. With a LOG_FILE (as Scrapyd gives every
job) the line is logged there too, where `scrapy batch --scrapyd` reads it. `scrapy crawl
node_check` only reports what this node resolves and reaches (exit 1 when it is not ready).

A crawl closed because the store refused a write mid-crawl (disk full, read-only)
exits with status 1, and so does a crawl with a query that kept no result because every one of
its sources failed (unreachable, or error answers after the retries). A crawl whose source
stopped on a page its parse rules no longer read (stop reason `layout_changed`) exits 0, like a
source stopped by a block: the crawl itself did not fail, it kept every page before that one;
its one WARNING names the saved page and the fix, and `scrapy engines` keeps saying it.
"""

from __future__ import annotations

import argparse
import logging
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings
from scrapy.spiders import Spider

from lyra_crawl.backend_urls import urls_from_settings
from lyra_crawl.backends import open_backends, run_sync
from lyra_crawl.backends.protocols import QueryStore
from lyra_crawl.batch.targets import REFUSED, check_expected, node_report
from lyra_crawl.batch.workers import stop_with_batch_command
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, load_config
from lyra_crawl.query.arguments import ArgumentError, parse_launch
from lyra_crawl.query.papers_target import PapersTarget, parse_papers_budget, parse_papers_target
from lyra_crawl.quoting import show
from lyra_crawl.records import BackendError

logger = logging.getLogger(__name__)

EXIT_BAD_INPUT = 2
EXIT_STORAGE_FAILED = 1
EXIT_QUERY_FAILED = 1
EXIT_NODE_NOT_READY = 1


class Command(FreezeAtStart, ScrapyCrawlCommand):
    _crawler: Crawler | None = None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # The crawl's own modules are imported by the command that crawls: Scrapy imports every
        # command to list them, and those that do not crawl (select, export-papers, report, …)
        # need none of them.
        from lyra_crawl.session.closing import FAILED_QUERIES
        from lyra_crawl.session.crawl import STORAGE_ERROR
        from lyra_crawl.spiders.node_check import NodeCheckSpider
        from lyra_crawl.spiders.papers import PapersSpider
        from lyra_crawl.spiders.serp import SerpSpider

        spider = args[0] if args else None
        stop_with_batch_command()
        if spider == NodeCheckSpider.name:
            self._check_node()
            return
        if spider in (SerpSpider.name, PapersSpider.name):
            try:
                check_expected(self.settings)
                config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
                target = None
                if spider == SerpSpider.name:
                    parse_launch(opts.spargs, config)
                else:
                    target = parse_papers_target(opts.spargs)
                    parse_papers_budget(self.settings.get("LYRA_PAPERS_DAILY_BUDGET"))
                run_sync(check_backends(self.settings, target))
            except (ArgumentError, ConfigError, BackendError) as exc:
                self._refuse(str(exc))
                return
        super().run(args, opts)
        crawler = self._crawler
        if crawler is not None and crawler.stats.get_value("finish_reason") == STORAGE_ERROR:
            self.exitcode = EXIT_STORAGE_FAILED
        elif crawler is not None and crawler.stats.get_value(FAILED_QUERIES):
            self.exitcode = EXIT_QUERY_FAILED

    def _refuse(self, message: str) -> None:
        """One `error:` line, exit 2; in the log file too (a Scrapyd job's log), marked so that
        whoever scheduled the job finds it (lyra_crawl.batch.scrapyd.job_refusal)."""
        print(f"error: {message}", file=sys.stderr)
        if self.settings.get("LOG_FILE"):
            logger.error("%s%s", REFUSED, message)
        self.exitcode = EXIT_BAD_INPUT

    def _check_node(self) -> None:
        """`scrapy crawl node_check`: its report printed, and in the log file (if any) as the
        line `scrapy nodes` reads."""
        try:
            report = run_sync(node_report(self.settings))
        except BackendError as exc:
            self._refuse(str(exc))
            return
        print("\n".join(report.lines("this node")))
        if self.settings.get("LOG_FILE"):
            logger.info("%s", report.log_line())
        self.exitcode = 0 if report.ready else EXIT_NODE_NOT_READY

    def _create_crawler(self, spidercls: type[Spider] | str) -> Crawler:
        # Kept to read its close reason: the process has dropped it once the crawl is over.
        self._crawler = super()._create_crawler(spidercls)
        return self._crawler


async def check_backends(settings: BaseSettings, target: PapersTarget | None = None) -> None:
    """Open and close the store and coordinator the settings name: BackendError if unusable;
    with a papers spider's `target`, ArgumentError unless the store holds its task or query."""
    backends = await open_backends(urls_from_settings(settings))
    try:
        if target is not None:
            await _check_stored(backends.store, target)
    finally:
        await backends.close()


async def _check_stored(store: QueryStore, target: PapersTarget) -> None:
    if target.query_id is not None:
        if await store.query(target.query_id) is None:
            raise ArgumentError(
                f"query_id {target.query_id} is not in the store ({store.url}): "
                "give the id of a crawled query (scrapy report lists them)"
            )
    elif not await store.query_ids(task_id=target.task_id):
        raise ArgumentError(
            f"task_id {show(target.task_id)} has no queries in the store ({store.url}): crawl it "
            f'first (scrapy crawl serp -a task_id={target.task_id} -a query="…")'
        )
