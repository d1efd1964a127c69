"""Types shared by every engine family: what a parser returns and what a page request is.

A parser is a pure function of (engine spec, response body, page number) -> ParseResult; the
spider only wires it in. Nothing here imports Scrapy.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from lyra_crawl.results import SerpResult

_YEAR_RE = re.compile(r"\s*([0-9]{4})\b")
_WHOLE_NUMBER_RE = re.compile(r"\s*([0-9]{1,18})\s*")


class Outcome(StrEnum):
    """What a fetched page turned out to be. Every value but OK, EMPTY, LAYOUT_CHANGED and ERROR
    is a block."""

    OK = "ok"
    # The engine's own "nothing matched" page (or an API's empty answer).
    EMPTY = "empty"
    # Neither results, nor a known no-results page, nor a block: the parser no longer reads the
    # page. Never a block: the engine did nothing wrong, the parser is stale.
    LAYOUT_CHANGED = "layout_changed"
    CAPTCHA = "captcha"
    JAVASCRIPT_REQUIRED = "javascript_required"
    GEO_BLOCK = "geo_block"
    RATE_LIMITED = "rate_limited"
    ACCESS_DENIED = "access_denied"
    # Results came back, but not the page asked for: the same page again, or another page
    # number. Engines do this instead of a CAPTCHA when they throttle quietly.
    SOFT_BLOCK = "soft_block"
    ERROR = "error"

    @property
    def is_block(self) -> bool:
        return self in BLOCK_OUTCOMES


BLOCK_OUTCOMES = frozenset(
    {
        Outcome.CAPTCHA,
        Outcome.JAVASCRIPT_REQUIRED,
        Outcome.GEO_BLOCK,
        Outcome.RATE_LIMITED,
        Outcome.ACCESS_DENIED,
        Outcome.SOFT_BLOCK,
    }
)


@dataclass(frozen=True)
class PageRequest:
    """An engine request for one page, before any routing to the simulator."""

    url: str
    method: str = "GET"
    formdata: tuple[tuple[str, str], ...] | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Extracted:
    """What a family parser found in a body, before parse_page decides the page's outcome."""

    results: tuple[SerpResult, ...] = ()
    # The page number the response says it is, when it says so.
    shown_page: int | None = None
    # Set when the engine answered with an error document instead of results.
    error: str = ""
    # A block the body itself declares (an API's error code) where no marker can tell it.
    block: Outcome | None = None
    # Set when the body has another shape than the one the parser reads: what it expected.
    layout_changed: str = ""
    # HTML: the layout whose result containers were found ('' when none), and how many.
    layout: str = ""
    containers: int = 0
    next_request: PageRequest | None = None
    follow_up: PageRequest | None = None
    dropped: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ParseResult:
    """Results of one page plus what the page was.

    `next_request` carries token hand-offs to page N+1. `follow_up` is a second request that
    completes this page (PubMed's esummary): until it is answered the results carry ids only.
    `tokens` are the fields a token page (Startpage's home page) hands to page 1.
    """

    outcome: Outcome
    results: tuple[SerpResult, ...] = ()
    detail: str = ""
    next_request: PageRequest | None = None
    follow_up: PageRequest | None = None
    tokens: tuple[tuple[str, str], ...] = ()
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def blocked(self) -> bool:
        return self.outcome.is_block


def leading_year(text: str | None) -> int | None:
    """The year a date starts with ('2024 Jan 15', '2022-02-24T…'), None when it has none."""
    match = _YEAR_RE.match(text or "")
    return int(match.group(1)) if match else None


def whole_number(text: str | None) -> int | None:
    """The ASCII whole number `text` holds, None otherwise ('²'.isdigit() is True, int() fails)."""
    match = _WHOLE_NUMBER_RE.fullmatch(text or "")
    return int(match.group(1)) if match else None


def record_results(
    records: Any, convert: Callable[[dict[str, Any]], SerpResult | None]
) -> tuple[tuple[SerpResult, ...], dict[str, int]]:
    """An API's records as results, in order, and why the others were dropped.

    `convert` reads a record of the documented shape and returns None when it has no title (or
    no id); a record of another shape (a list where an object was due, a number for a title)
    is dropped as `malformed_record` instead of failing the page.
    """
    if not isinstance(records, list):
        records = []
    results = []
    dropped: dict[str, int] = {}
    for record in records:
        try:
            found = convert(record) if isinstance(record, dict) else None
            reason = "no_title" if found is None else ""
        except (AttributeError, TypeError, KeyError, IndexError, ValueError):
            found, reason = None, "malformed_record"
        if found is None:
            dropped[reason] = dropped.get(reason, 0) + 1
        else:
            results.append(found)
    return tuple(results), dropped
