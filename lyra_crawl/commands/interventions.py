"""`scrapy interventions`: list the open block pages awaiting a person; `--resolve ID` closes one.

Block pages (CAPTCHA, 403, 429, ...) are queued by BlockDetectionMiddleware in the database
(LYRA_DB_PATH). Resolving one does not close the engine's breaker: that reopens on its own
cool-down with a trial request.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand

from lyra_crawl.storage import open_storage

EXIT_NOT_FOUND = 2


class Command(ScrapyCommand):
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
        storage = open_storage(self.settings["LYRA_DB_PATH"])
        try:
            if opts.resolve is not None:
                if storage.resolve_intervention(opts.resolve):
                    print(f"resolved intervention {opts.resolve}")
                else:
                    print(
                        f"error: no open intervention {opts.resolve}: list them with "
                        "`scrapy interventions`",
                        file=sys.stderr,
                    )
                    self.exitcode = EXIT_NOT_FOUND
                return
            rows = storage.open_interventions()
            if not rows:
                print("no open interventions")
            for row in rows:
                query = row["query_id"] if row["query_id"] is not None else "-"
                print(
                    f"{row['id']}  {row['engine']}  {row['kind']}  {row['created_at']}  "
                    f"query {query}  {row['url']}"
                )
        finally:
            storage.close()
