"""`scrapy nodes --scrapyd URL[,URL…]`: check Scrapyd nodes before a batch spends quota on them.

Schedules one `node_check` job on each node (lyra_crawl.spiders.node_check) with the settings
`scrapy batch --scrapyd` would give a batch's jobs (lyra_crawl.batch.scrapyd.job_settings: so the
job knows where this run stores and coordinates, LYRA_EXPECT_DB and LYRA_EXPECT_COORDINATION,
and no secret travels), waits for them, and prints for each node what it resolves its store and
coordinator to (passwords hidden), whether that is where this run stores and coordinates, and
whether the node reaches them. The check sends no request and opens only the backends that are
where this run's are. Exit status 0 when every node is ready, 1 when any is not or could not be
asked, 2 on a bad setting here.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.utils.conf import get_config

from lyra_crawl.batch.targets import NodeReport
from lyra_crawl.commands.batch import scrapyd_nodes
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.records import BackendError

EXIT_NOT_READY = 1
EXIT_BAD_INPUT = 2
DEFAULT_TIMEOUT_S = 120.0


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--scrapyd URL[,URL...]"

    def short_desc(self) -> str:
        return "Check that Scrapyd nodes store and coordinate where this run does, and reach both"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--scrapyd",
            metavar="URL[,URL...]",
            help="the nodes to check, as given to scrapy batch --scrapyd",
        )
        parser.add_argument(
            "--project",
            help="Scrapyd project (default the [deploy] project in scrapy.cfg, else lyra_crawl)",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=DEFAULT_TIMEOUT_S,
            metavar="SECONDS",
            help=f"stop waiting for the checks after this long (default {DEFAULT_TIMEOUT_S:.0f})",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("scrapy nodes takes no arguments: give the nodes with --scrapyd")
        nodes = scrapyd_nodes(opts.scrapyd or "")
        if not nodes:
            raise UsageError("--scrapyd needs a URL, or several separated by commas")
        # Imported here: every `scrapy` command imports this module, and scrapyd-client with
        # requests takes 20-60 ms.
        from lyra_crawl.batch.scrapyd import check_nodes, job_settings

        project = opts.project or get_config().get("deploy", "project", fallback="lyra_crawl")
        try:
            settings = job_settings(self.settings)
        except BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_BAD_INPUT
            return
        checks = check_nodes(nodes, project, settings, timeout=opts.timeout)
        for url, found in checks.items():
            if isinstance(found, NodeReport):
                print("\n".join(found.lines(url)))
        for url, found in checks.items():
            problem = found.problems() if isinstance(found, NodeReport) else found
            if problem:
                print(f"error: {url}: {problem}", file=sys.stderr)
        ready = sum(isinstance(found, NodeReport) and found.ready for found in checks.values())
        print(f"{ready} of {len(nodes)} nodes ready")
        self.exitcode = 0 if ready == len(nodes) else EXIT_NOT_READY
