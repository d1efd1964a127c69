"""`scrapy interventions`: list the open block pages awaiting a person; `--resolve ID` closes one.

Block pages (CAPTCHA, 403, 429, ...) are queued by BlockDetectionMiddleware in the store
(LYRA_DB_URL). Resolving one does not close the engine's breaker: that reopens on its own
cool-down with a trial request.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand

from lyra_crawl.backends import run_sync, with_backends
from lyra_crawl.commands.process_start import FreezeAtStart

EXIT_NOT_FOUND = 2


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--resolve ID]"

    def short_desc(self) -> str:
        return "List open interventions (block pages awaiting a person), or resolve one"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--resolve", type=int, metavar="ID", help="close intervention ID")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if opts.resolve is not None:
            resolved = run_sync(
                with_backends(self.settings, lambda b: b.store.resolve_intervention(opts.resolve))
            )
            if resolved:
                print(f"resolved intervention {opts.resolve}")
            else:
                print(
                    f"error: no open intervention {opts.resolve}: list them with "
                    "`scrapy interventions`",
                    file=sys.stderr,
                )
                self.exitcode = EXIT_NOT_FOUND
            return
        interventions = run_sync(
            with_backends(self.settings, lambda b: b.store.open_interventions())
        )
        if not interventions:
            print("no open interventions")
        for open_one in interventions:
            query = open_one.query_id if open_one.query_id is not None else "-"
            print(
                f"{open_one.id}  {open_one.engine}  {open_one.kind}  {open_one.created_at}  "
                f"query {query}  {open_one.url}"
            )
