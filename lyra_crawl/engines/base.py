"""Types shared by every engine family: what a parser returns and what a page request is.

A parser is a pure function of (engine spec, response body, page number) -> ParseResult; the
spider only wires it in. Nothing here imports Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    """What a fetched page turned out to be. Every value but OK and EMPTY is a block."""

    OK = "ok"
    EMPTY = "empty"
    CAPTCHA = "captcha"
    JAVASCRIPT_REQUIRED = "javascript_required"
    GEO_BLOCK = "geo_block"
    RATE_LIMITED = "rate_limited"
    ACCESS_DENIED = "access_denied"
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
    }
)


@dataclass(frozen=True)
class SerpResult:
    """One organic result as the engine showed it (URL already unwrapped from redirects)."""

    url: str
    title: str
    snippet: str = ""
    date: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None


@dataclass(frozen=True)
class PageRequest:
    """An engine request for one page, before any routing to the simulator."""

    url: str
    method: str = "GET"
    formdata: tuple[tuple[str, str], ...] | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ParseResult:
    """Results of one page plus what the page was; `next_request` carries token hand-offs."""

    outcome: Outcome
    results: tuple[SerpResult, ...] = ()
    detail: str = ""
    next_request: PageRequest | None = None
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def blocked(self) -> bool:
        return self.outcome.is_block
