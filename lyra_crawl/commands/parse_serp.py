"""`scrapy parse-serp ENGINE FILE`: parse a saved result page with the crawler's own parser.

For users whose engine broke (save the page, see what the parser makes of it) and for
conformance checks. Prints one JSON line per result (rank, url, title, snippet, and date, doi,
arxiv_id, pmid, authors, year, venue, abstract, source_id, pdf_url where the engine gives them).
A block page prints the single line `blocked: <kind>` and exits with status 3; an error page
prints `error: ...` and exits with 1; a bad engine name or file exits with 2. Reads
LYRA_CONFIG_DIR like the crawl does.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.config import ConfigError, load_config
from lyra_crawl.engines.base import Outcome, ParseResult
from lyra_crawl.engines.parsing import parse_page

EXIT_ERROR_PAGE = 1
EXIT_BAD_INPUT = 2
EXIT_BLOCKED = 3


class Command(ScrapyCommand):
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] ENGINE FILE"

    def short_desc(self) -> str:
        return "Parse a saved result page; one JSON line per result"

    def long_desc(self) -> str:
        return __doc__ or ""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--page", type=int, default=1, help="the page number the file was (default 1)"
        )
        parser.add_argument(
            "--status", type=int, default=200, help="the HTTP status it came with (default 200)"
        )
        parser.add_argument(
            "--url", default="", help="the URL it came from (some blocks are seen in the URL)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            raise UsageError("give ENGINE and FILE")
        engine, path = args
        try:
            config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
            if engine not in config.engines:
                known = ", ".join(sorted(config.engines))
                raise ValueError(f"engine '{engine}' is unknown: use one of {known}")
            body = Path(path).read_bytes()
        except (ConfigError, ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_BAD_INPUT
            return
        result = parse_page(
            config.engine(engine), body, opts.page, status=opts.status, url=opts.url
        )
        self.exitcode = report(result)


def report(result: ParseResult) -> int:
    """Print the page's results (or its block) and return the exit status."""
    if result.blocked:
        print(f"blocked: {result.outcome.value}")
        return EXIT_BLOCKED
    if result.outcome is Outcome.ERROR:
        print(f"error: {result.detail}", file=sys.stderr)
        return EXIT_ERROR_PAGE
    for rank, found in enumerate(result.results, start=1):
        fields = {key: value for key, value in asdict(found).items() if value not in (None, ())}
        print(json.dumps({"rank": rank, **fields}, ensure_ascii=False))
    if result.follow_up is not None:
        print(
            f"note: the engine completes this page with a second request: {result.follow_up.url}",
            file=sys.stderr,
        )
    return 0
