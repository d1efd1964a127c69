"""The typed records the backends take and return. Pure: no driver type ever leaves a backend.

What a crawl writes (QueryRecord, PageRecord, the items) and what it reads back (StoredQuery,
StoredPage, StoredItem, StoredPaper, …). Stored records extend what was written, so a column
is named once here and once in each backend's SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lyra_crawl.items import ResultItem
from lyra_crawl.politeness.breaker import Health


class BackendError(RuntimeError):
    """A backend cannot be opened, read or written; the message names it and the fix."""


# -- queries ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryRecord:
    """What a crawl knows about its query when it starts."""

    query_text: str
    normalized_query: str
    engine: str
    serp_page: int
    serp_max_pages: int
    strategy: str
    sources: str = "serp"
    time_range: str | None = None
    region: str | None = None
    task_id: str | None = None
    job_id: str | None = None
    selection: Mapping[str, Any] | None = None
    batch_entry_id: int | None = None


@dataclass(frozen=True, kw_only=True)
class StoredQuery(QueryRecord):
    """A `queries` row: what the crawl started with, and how it went."""

    id: int
    status: str
    stop_reason: Mapping[str, str] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)
    attribution: Mapping[str, int] | None = None
    harvest_rate: float | None = None
    pages_fetched: int = 0
    items: int = 0
    cache_hit: bool = False
    cached_from: int | None = None
    pid: int | None = None
    started_at: str = ""
    finished_at: str | None = None


# -- pages and items -------------------------------------------------------------------------


@dataclass(frozen=True)
class PageRecord:
    """One fetched page of one source, stored with its items in one transaction."""

    query_id: int
    source: str
    page_number: int
    outcome: str
    results: int
    url: str = ""
    novelty_rate: float | None = None
    harvest_rate: float | None = None


@dataclass(frozen=True, kw_only=True)
class StoredPage(PageRecord):
    items_stored: int
    fetched_at: str


@dataclass(kw_only=True)
class StoredItem(ResultItem):
    """A `serp_items` row: the item as stored, with what the query's close added."""

    fetched_at: str
    paper_id: int | None = None
    fused_rank: int | None = None


# -- papers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredPaper:
    """A `papers` row: one canonical paper across every query that found it."""

    id: int
    title: str
    normalized_title: str
    attribution: str
    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    year: int | None = None
    authors: tuple[str, ...] = ()
    venue: str | None = None
    abstract: str | None = None
    external_ids: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()


# -- interventions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Intervention:
    """A block page queued for a person (`scrapy interventions`)."""

    id: int
    engine: str
    url: str
    query_id: int | None
    kind: str
    detail: str
    status: str
    created_at: str
    resolved_at: str | None = None


# -- batches ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntrySpec:
    """One entry of a batch file as recorded: checked arguments, or why it was rejected."""

    position: int
    query_text: str
    arguments: Mapping[str, str]
    rejected: str = ""


@dataclass(frozen=True)
class BatchRecord:
    id: int
    source: str
    content_hash: str
    created_at: str
    entries: int


@dataclass(frozen=True)
class BatchEntry:
    """A `batch_entries` row. state: pending | running | done | failed | rejected."""

    id: int
    batch_id: int
    position: int
    query_text: str
    arguments: Mapping[str, str]
    state: str
    attempts: int = 0
    query_id: int | None = None
    engine: str | None = None
    detail: str = ""
    started_at: str | None = None
    finished_at: str | None = None


# -- coordination ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RateClaim:
    """The answer to a claim on an engine's send slot.

    Granted: `token` identifies the lease, to be handed back on release. Refused: the slot is
    free again in `wait_s` when that time is known (released, spacing running), else it is held
    by a request in flight (`held`) whose lease ends in `wait_s` at the latest.
    """

    token: float | None
    wait_s: float = 0.0
    held: bool = False

    @property
    def granted(self) -> bool:
        return self.token is not None


@dataclass(frozen=True)
class EngineState:
    """What engine choice needs to know of one engine: its breaker, and its quota used today."""

    health: Health
    used_today: int


@dataclass(frozen=True)
class BreakerChange:
    """An engine's breaker before and after a recorded failure."""

    before: Health
    after: Health

    @property
    def tripped(self) -> bool:
        return self.after.trips > self.before.trips
