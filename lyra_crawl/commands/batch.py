"""`scrapy batch FILE [--scrapyd URL]`: crawl every query of a batch file.

Without --scrapyd, all crawls run at once in this process (the politeness middlewares
interleave the engines). With --scrapyd, each query becomes one job scheduled through
schedule.json, and the command waits, printing each job's progress; the jobs get this run's
LYRA_* settings, so they write to the database this command reads.

Queries with a fresh cache entry are skipped. A bad entry is reported with its position and
skipped. Each crawl is judged by its own status row in the queries table. Exit status: 0 when
every entry succeeded, 1 when any failed or was rejected, 2 when the file or config is unusable.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

from scrapy.commands import ScrapyCommand
from scrapy.crawler import Crawler
from scrapy.exceptions import UsageError
from scrapy.utils.conf import get_config
from scrapyd_client.pyclient import ScrapydClient

from lyra_crawl.batch.files import (
    BatchEntry,
    BatchError,
    EntryOutcome,
    crawl_outcome,
    load_batch,
    rejected_outcome,
    split_cached,
    summary_lines,
)
from lyra_crawl.batch.scrapyd import SchedulingError, job_settings, schedule_crawl, wait_for_jobs
from lyra_crawl.config import ConfigError, load_config
from lyra_crawl.spiders.serp import SerpSpider
from lyra_crawl.storage import Storage, StorageError, open_storage

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[options] FILE"

    def short_desc(self) -> str:
        return "Crawl every query of a batch file, here or on Scrapyd"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--scrapyd", metavar="URL", help="schedule the crawls on this Scrapyd")
        parser.add_argument(
            "--project",
            help="Scrapyd project (default the [deploy] project in scrapy.cfg, else lyra_crawl)",
        )
        parser.add_argument(
            "--poll-interval",
            type=float,
            default=2.0,
            metavar="SECONDS",
            help="with --scrapyd, seconds between two looks at listjobs.json (default 2)",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            metavar="SECONDS",
            help="with --scrapyd, stop waiting after this long (default until all are done)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one batch file: scrapy batch FILE")
        try:
            batch = load_batch(args[0], load_config(self.settings.get("LYRA_CONFIG_DIR")))
            storage = open_storage(self.settings.get("LYRA_DB_PATH"))
        except (BatchError, ConfigError, StorageError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_BAD_INPUT
            return
        for rejected in batch.rejected:
            print(f"error: {rejected.message}", file=sys.stderr)
        try:
            outcomes = self._run_batch(batch.entries, storage, opts)
        except SchedulingError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_FAILED
            return
        finally:
            storage.close()
        outcomes += [rejected_outcome(rejected) for rejected in batch.rejected]
        print("\n".join(summary_lines(outcomes)))
        self.exitcode = 0 if all(outcome.succeeded for outcome in outcomes) else EXIT_FAILED

    def _run_batch(
        self, entries: Sequence[BatchEntry], storage: Storage, opts: argparse.Namespace
    ) -> list[EntryOutcome]:
        now = datetime.now(UTC)
        to_crawl, cached = split_cached(entries, lambda key: storage.fresh_cache_entry(key, now))
        for outcome in cached:
            print(
                f"entry {outcome.position}: skipped, fresh in the cache (query {outcome.query_id})"
            )
        if not to_crawl:
            return cached
        if opts.scrapyd:
            return cached + self._crawl_on_scrapyd(to_crawl, storage, opts)
        return cached + self._crawl_here(to_crawl, storage)

    def _crawl_here(self, entries: Sequence[BatchEntry], storage: Storage) -> list[EntryOutcome]:
        assert self.crawler_process is not None
        crawlers: list[tuple[BatchEntry, Crawler]] = []
        for entry in entries:
            crawler = self.crawler_process.create_crawler(SerpSpider.name)
            self.crawler_process.crawl(crawler, **entry.spider_args)
            crawlers.append((entry, crawler))
        self.crawler_process.start()
        outcomes = []
        for entry, crawler in crawlers:
            query_id = getattr(getattr(crawler, "spider", None), "query_id", None)
            row = storage.query(query_id) if query_id is not None else None
            outcomes.append(crawl_outcome(entry, row, "the crawl did not start: see the log"))
        return outcomes

    def _crawl_on_scrapyd(
        self, entries: Sequence[BatchEntry], storage: Storage, opts: argparse.Namespace
    ) -> list[EntryOutcome]:
        client = ScrapydClient(opts.scrapyd)
        project = opts.project or get_config().get("deploy", "project", fallback="lyra_crawl")
        settings = job_settings(self.settings)
        jobs = {
            schedule_crawl(client, project, entry.spider_args, settings): entry for entry in entries
        }

        def progress(job_id: str, state: str) -> None:
            entry = jobs[job_id]
            print(f"entry {entry.position} {entry.query!r}: {state} (job {job_id})", flush=True)

        states = wait_for_jobs(
            client,
            project,
            list(jobs),
            poll_interval=opts.poll_interval,
            timeout=opts.timeout,
            on_change=progress,
        )
        return [
            crawl_outcome(
                entry,
                storage.query_for_job(job_id),
                f"Scrapyd job {job_id} ({states[job_id]}) wrote no status row: see its log",
            )
            for job_id, entry in jobs.items()
        ]
