"""`scrapy check-engines [ENGINE ...] [-q QUERY]`: does each engine still answer, and does its
parser still read the answer?

For each enabled engine (or each one named), one real query, page 1 only, as a crawl: one
`serp` crawl per engine (`-a engine=NAME -a sources=serp`; a scholarly API as
`-a sources=NAME`), all running at once in this process, so every request passes the
politeness chain (engine turn, breaker, daily quota, send slot) and counts against the quota
like any other; each check is a stored query (task id `check-engines-<UTC time>`, cache off).
Prints one line per engine: `ok: N results`, `empty: <no-results marker>`,
`blocked: <kind> (<marker>)`, `layout_changed: <what the rules did not find>`, `error: ...`, or
why no request went (quota spent, breaker open); and saves each page under LYRA_DATA_DIR's
`check/<engine>/` for `scrapy parse-serp`. The crawls log at WARNING unless -L says otherwise.
Exit status: 0 when every engine is ok, 1 when any is not, 2 on a bad engine name, config or
store (nothing sent).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.http import Response

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.commands.crawl import check_backends
from lyra_crawl.commands.page_outcome import outcome_text
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, LyraConfig, load_config
from lyra_crawl.engines.base import Outcome
from lyra_crawl.paging.stop_rules import StopReason
from lyra_crawl.query.arguments import ArgumentError, check_engine, parse_launch, usable_engines
from lyra_crawl.records import BackendError, StoredQuery
from lyra_crawl.session.page_outcome import PageOutcome, page_judged
from lyra_crawl.session.request_state import RequestKind
from lyra_crawl.session.saved_pages import check_page_path, data_dir, page_suffix, save_page, stamp

# Harmless, and answered by every web engine and scholarly API.
CHECK_QUERY = "climate change"
TASK_PREFIX = "check-engines"
EXIT_NOT_OK = 1
EXIT_BAD_INPUT = 2
# Why a check sent no request, said for people.
REFUSED = {
    StopReason.QUOTA.value: "today's daily limit is spent (see `scrapy engines`)",
    StopReason.BLOCKED.value: "its breaker is open (see `scrapy engines`)",
}


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[options] [ENGINE ...]"

    def short_desc(self) -> str:
        return "Fetch page 1 of one query from each engine; say whether its parser reads it"

    def long_desc(self) -> str:
        return __doc__ or ""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-q", "--query", default=CHECK_QUERY, help=f"the query (default {CHECK_QUERY!r})"
        )

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        if opts.loglevel is None:
            # A check's answer is its lines; the crawls' INFO lines (stats dumps) would bury it.
            self.settings.set("LOG_LEVEL", "WARNING", priority="cmdline")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        moment = datetime.now(UTC)
        task_id = f"{TASK_PREFIX}-{stamp(moment)}"
        try:
            config = load_config(self.settings.get("LYRA_CONFIG_DIR"))
            engines = engines_to_check(config, args)
            plans = {name: check_arguments(config, name, opts.query, task_id) for name in engines}
            for arguments in plans.values():
                parse_launch(arguments, config)
            run_sync(check_backends(self.settings))
        except (ArgumentError, ConfigError, BackendError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_BAD_INPUT
            return
        # Imported by the commands that crawl (Scrapy imports every command to list them).
        from lyra_crawl.spiders.serp import SerpSpider

        assert self.crawler_process is not None
        watchers = {name: LastPage() for name in engines}
        for name, arguments in plans.items():
            crawler = self.crawler_process.create_crawler(SerpSpider)
            crawler.signals.connect(watchers[name].page_judged, signal=page_judged)
            self.crawler_process.crawl(crawler, **arguments)
        self.crawler_process.start()
        queries = run_sync(with_backends(self.settings, lambda b: stored_checks(b, task_id)))
        folder = data_dir(self.settings)
        checks = [
            engine_check(name, watchers[name], queries.get(name), folder, moment)
            for name in engines
        ]
        for check in checks:
            print(f"{check.engine:<16} {check.line}", flush=True)
        self.exitcode = 0 if all(check.ok for check in checks) else EXIT_NOT_OK


def engines_to_check(config: LyraConfig, named: list[str]) -> list[str]:
    """The engines named (each checked usable), else every usable one."""
    for name in named:
        check_engine(config, name)
    return list(dict.fromkeys(named)) or usable_engines(config)


def check_arguments(config: LyraConfig, engine: str, query: str, task_id: str) -> dict[str, str]:
    """The serp spider's arguments for page 1 of `query` from `engine` alone."""
    # A scholarly API runs as a source of its own; a web engine as the query's SERP engine.
    scholarly = config.engine(engine).scholarly
    source = {"sources": engine} if scholarly else {"engine": engine, "sources": "serp"}
    return {
        "query": query,
        **source,
        "serp_max_pages": "1",
        "cache": "off",
        "task_id": task_id,
    }


class LastPage:
    """The page that tells how one check went: page 1 (or its follow-up), or a token page that
    did not let the crawl reach it."""

    def __init__(self) -> None:
        self.page: PageOutcome | None = None
        self.response: Response | None = None

    def page_judged(self, page: PageOutcome, response: Response) -> None:
        if page.kind is RequestKind.TOKEN_PAGE and page.outcome is Outcome.OK:
            return  # it only opens the way to page 1
        self.page, self.response = page, response


async def stored_checks(backends: Backends, task_id: str) -> dict[str, StoredQuery]:
    """The stored query of each engine checked in this run, by engine."""
    store = backends.store
    found: dict[str, StoredQuery] = {}
    for query_id in await store.query_ids(task_id=task_id):
        query = await store.query(query_id)
        if query is not None:
            found.update((source, query) for source in query.stop_reason)
    return found


@dataclass(frozen=True)
class EngineCheck:
    engine: str
    ok: bool
    line: str


def engine_check(
    engine: str, watched: LastPage, query: StoredQuery | None, folder: Path, moment: datetime
) -> EngineCheck:
    """What the check of `engine` found: its page's outcome and where the page is saved, or
    why no page came."""
    page, response = watched.page, watched.response
    if page is None or response is None:
        return EngineCheck(engine, False, _no_page(engine, query))
    line = outcome_text(page.outcome, page.detail, page.results)
    content_type = response.headers.get("Content-Type", b"").decode("latin-1")
    path = check_page_path(folder, engine, page_suffix(content_type), moment)
    try:
        line += f" (page saved as {save_page(path, response.body)})"
    except OSError as exc:
        line += f" (the page could not be saved: {exc})"
    return EngineCheck(engine, page.outcome is Outcome.OK, line)


def _no_page(engine: str, query: StoredQuery | None) -> str:
    if query is None:
        return "error: the check did not run (see the log above)"
    reason = query.stop_reason.get(engine, "")
    if reason in REFUSED:
        return f"not sent: {REFUSED[reason]}"
    return f"error: {query.errors.get(engine) or reason or 'no answer'}"
