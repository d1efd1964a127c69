"""How a page's outcome reads in one line, for the commands that print it (parse-serp,
check-engines). A module without a command class: Scrapy lists no command for it."""

from __future__ import annotations

from lyra_crawl.engines.base import Outcome


def outcome_text(outcome: Outcome, detail: str, results: int) -> str:
    """The outcome of a page and its detail, in one line: `ok: 10 results`, …"""
    if outcome is Outcome.OK:
        return f"ok: {results} result{'' if results == 1 else 's'}"
    if outcome.is_block:
        return f"blocked: {outcome.value} ({detail})" if detail else f"blocked: {outcome.value}"
    return f"{outcome.value}: {detail or 'no results'}"
