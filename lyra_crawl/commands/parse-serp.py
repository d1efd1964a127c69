"""`scrapy parse-serp ENGINE FILE`: parse a saved result page with the crawler's own parser.

For users whose engine broke (a crawl saves a page its rules could not read under
LYRA_DATA_DIR's stale/ folder, `scrapy check-engines` each page it checked under check/; edit
the engine's rules in search_parsers.yaml until this reads the page) and for conformance
checks. Prints on stdout one JSON line per result (rank, url, title, snippet, and date, doi,
arxiv_id, pmid, authors, year, venue, abstract, source_id, pdf_url where the engine gives
them). Prints on stderr which page it parsed the file as and why: --page when given (and
whether the page states another), else the number the page states (its URL with --url, the
pager's current page, its canonical link, its Next link or form), else 1; then the outcome and
its detail: `ok: N results`, `empty: <the no-results marker>`, `layout_changed: <what the
rules did not find>`, `blocked: <kind> (<marker>)`, `error: ...`.
Exit status: 0 ok or empty, 1 an error page, 2 a bad engine name or file, 3 a block page, 4 a
page in a layout the engine's rules do not read. Reads LYRA_CONFIG_DIR like the crawl does.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.commands.page_outcome import outcome_text
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, EngineSpec, load_config
from lyra_crawl.engines import html
from lyra_crawl.engines.base import Outcome, ParseResult
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.engines.stated_page import stated_page

EXIT_ERROR_PAGE = 1
EXIT_BAD_INPUT = 2
EXIT_BLOCKED = 3
EXIT_LAYOUT_CHANGED = 4


class Command(FreezeAtStart, ScrapyCommand):
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] ENGINE FILE"

    def short_desc(self) -> str:
        return "Parse a saved result page; one JSON line per result, its outcome on stderr"

    def long_desc(self) -> str:
        return __doc__ or ""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--page",
            type=int,
            help="the page number the file was (default: the number the page states, else 1)",
        )
        parser.add_argument(
            "--status", type=int, default=200, help="the HTTP status it came with (default 200)"
        )
        parser.add_argument(
            "--url",
            default="",
            help="the URL it came from (some blocks are seen in the URL; it may state the page)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            raise UsageError("give ENGINE and FILE")
        engine, path = args
        if opts.page is not None and opts.page < 1:
            raise UsageError(f"--page starts at 1 (got {opts.page})")
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
        spec = config.engine(engine)
        number, how = page_to_parse(spec, body, opts.page, opts.url)
        print(f"page {number}: {how}", file=sys.stderr)
        result = parse_page(spec, body, number, status=opts.status, url=opts.url)
        self.exitcode = report(result)


def page_to_parse(spec: EngineSpec, body: bytes, asked: int | None, url: str) -> tuple[int, str]:
    """The page number to parse the file as, and why that one."""
    page = html.page_selector(body) if spec.family == "html" else None
    stated = stated_page(spec, page, url)
    if asked is None:
        if stated is None:
            return 1, "the page does not state its number (give --page N if it is not 1)"
        return stated.number, stated.statement
    if stated is not None and stated.number != asked:
        return asked, f"as --page says, though {stated.statement} (page {stated.number})"
    return asked, "as --page says"


def report(result: ParseResult) -> int:
    """Print the page's results and its outcome; return the exit status."""
    for rank, found in enumerate(result.results, start=1):
        fields = {key: value for key, value in asdict(found).items() if value not in (None, ())}
        print(json.dumps({"rank": rank, **fields}, ensure_ascii=False))
    outcome = outcome_text(result.outcome, result.detail, len(result.results))
    if result.outcome is Outcome.OK and result.dropped:
        dropped = ", ".join(f"{reason} {count}" for reason, count in sorted(result.dropped.items()))
        outcome += f" (dropped: {dropped})"
    print(outcome, file=sys.stderr)
    if result.follow_up is not None:
        print(
            f"note: the engine completes this page with a second request: {result.follow_up.url}",
            file=sys.stderr,
        )
    if result.blocked:
        return EXIT_BLOCKED
    if result.outcome is Outcome.ERROR:
        return EXIT_ERROR_PAGE
    if result.outcome is Outcome.LAYOUT_CHANGED:
        return EXIT_LAYOUT_CHANGED
    return 0
