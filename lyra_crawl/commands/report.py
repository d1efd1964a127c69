"""`scrapy report [--last N | --query-id ID | --task TASK | --batch ID [--per-query]]
[--html FILE]`: what crawls stored.

Prints per query: engine, sources, pages per source, items new vs repeated, stop reasons,
harvest, attribution counts and quota use today; --html also writes one self-contained page
with plots. --batch ID reports the batch at a glance instead (lyra_crawl.reports.batch: one
summary, stop reasons, blocks, quota, requests over time, novelty and harvest by page depth,
aggregated in the store), with the per-query report after it only with --per-query. Reads the
store (LYRA_DB_URL), the Coordinator (LYRA_COORDINATION_URL) and LYRA_CONFIG_DIR. Exit status 1
when no query or batch matches, 2 when the store or config cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, LyraConfig, load_config
from lyra_crawl.quoting import show
from lyra_crawl.records import BackendError
from lyra_crawl.reports.batch import BatchReport, batch_report, batch_report_text
from lyra_crawl.reports.text import QueryReport, QuotaUse, query_report, quota_use, report_text

DEFAULT_LAST = 10


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--last N | --query-id ID | --task TASK | --batch ID [--per-query]] [--html FILE]"

    def short_desc(self) -> str:
        return "Report stored crawls: pages, items new vs repeated, stop reasons, quota"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--last", type=int, metavar="N", help=f"the last N queries (default {DEFAULT_LAST})"
        )
        which.add_argument(
            "--query-id", type=int, action="append", metavar="ID", help="this query (repeatable)"
        )
        which.add_argument("--task", metavar="TASK", help="every query of this task_id")
        which.add_argument(
            "--batch", type=int, metavar="ID", help="this batch at a glance (scrapy batch)"
        )
        parser.add_argument(
            "--per-query",
            action="store_true",
            help="with --batch: each of its queries too, after the batch",
        )
        parser.add_argument("--html", metavar="FILE", help="also write an HTML page with plots")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError(f"unexpected argument {show(args[0])}")
        if opts.last is not None and opts.last < 1:
            raise UsageError("--last must be 1 or more")
        if opts.per_query and opts.batch is None:
            raise UsageError("--per-query goes with --batch ID")
        now = datetime.now(UTC)
        if opts.batch is not None:
            self._report_batch(opts, now)
            return
        try:
            config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
            reports, quota, where = run_sync(
                with_backends(self.settings, lambda b: self._gather(b, config, opts, now))
            )
        except (ConfigError, BackendError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        if not reports:
            print(f"error: no query matches in {where}", file=sys.stderr)
            self.exitcode = 1
            return
        print(report_text(reports, quota))
        if opts.html:
            # matplotlib is imported only when a page is asked for: it is slow to load.
            from lyra_crawl.reports.html import report_html

            page = report_html(reports, quota, generated_at=now.isoformat(timespec="seconds"))
            Path(opts.html).write_text(page, encoding="utf-8")
            print(f"wrote {opts.html}")

    def _report_batch(self, opts: argparse.Namespace, now: datetime) -> None:
        try:
            config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
            gathered = run_sync(
                with_backends(self.settings, lambda b: self._gather_batch(b, config, opts, now))
            )
        except (ConfigError, BackendError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        report, queries, quota, where = gathered
        if report is None:
            print(f"error: no batch {opts.batch} in {where}", file=sys.stderr)
            self.exitcode = 1
            return
        print(batch_report_text(report))
        if queries:
            print(f"\nper query:\n{report_text(queries, quota)}")
        if opts.html:
            from lyra_crawl.reports.batch_html import batch_report_html

            page = batch_report_html(
                report,
                generated_at=now.isoformat(timespec="seconds"),
                queries=queries,
                quota_today=quota,
            )
            Path(opts.html).write_text(page, encoding="utf-8")
            print(f"wrote {opts.html}")

    async def _gather_batch(
        self, backends: Backends, config: LyraConfig, opts: argparse.Namespace, now: datetime
    ) -> tuple[BatchReport | None, list[QueryReport], list[QuotaUse], str]:
        store = backends.store
        report = await batch_report(store, backends.coordinator, config, opts.batch, now)
        queries: list[QueryReport] = []
        quota: list[QuotaUse] = []
        if report is not None and opts.per_query:
            ids = await store.batch_query_ids(opts.batch)
            queries = [r for r in [await query_report(store, i) for i in ids] if r is not None]
            quota = await quota_use(backends.coordinator, config, now.date())
        return report, queries, quota, store.url

    async def _gather(
        self, backends: Backends, config: LyraConfig, opts: argparse.Namespace, now: datetime
    ) -> tuple[list[QueryReport], list[QuotaUse], str]:
        store = backends.store
        if opts.query_id:
            ids = opts.query_id
        elif opts.task:
            ids = await store.query_ids(task_id=opts.task)
        else:
            ids = await store.query_ids(last=opts.last or DEFAULT_LAST)
        reports = [r for r in [await query_report(store, i) for i in ids] if r is not None]
        quota = await quota_use(backends.coordinator, config, now.date())
        return reports, quota, store.url
