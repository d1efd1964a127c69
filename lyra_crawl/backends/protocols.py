"""The backend protocols every component speaks, one per role. Async.

The result store keeps what a crawl found, in roles: `QueryStore` (queries, their pages and
items), `PaperStore` (the paper index and the citation graph), `LandingPageStore` (the papers
spider's landing pages), `SearchCache`, `InterventionQueue` (block pages for a person),
`BatchStore` (batches and their entries under leases), `BatchReports` (what is read of a
batch, its figures aggregated by the store) and `SelectionStore` (`scrapy select`'s audit).
One store object plays every role (`ResultStore`); a component depends on the roles it uses.
`Coordinator` holds what must be exact across every process sharing it (daily quotas, each
engine's send slot, circuit breakers). All return the typed records of
lyra_crawl.records, never a driver's row type. A backend is chosen by URL
(LYRA_DB_URL, LYRA_COORDINATION_URL; see lyra_crawl.backends.open_backends): SQLite is the
embedded default, PostgreSQL and Redis the way past one machine.

No call may block the reactor: SQLite runs every statement on a worker thread that owns its
connection; network backends use their asyncio clients.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from lyra_crawl.config import BreakerPolicy
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import CanonicalPaper
from lyra_crawl.politeness.breaker import Admission, Health
from lyra_crawl.records import (
    BatchEntry,
    BatchProgress,
    BatchRecord,
    BlockCount,
    BreakerChange,
    CitationFetch,
    CitationGraph,
    DepthRates,
    EngineState,
    EntrySpec,
    FoundPaper,
    Intervention,
    LandingPage,
    PageRecord,
    PaperToRead,
    QueryRecord,
    RateClaim,
    RequestBucket,
    SelectionRecord,
    StaleParser,
    StopReasonCount,
    StoredItem,
    StoredPage,
    StoredPaper,
    StoredQuery,
)


class Backend(Protocol):
    """What both protocols share: a URL safe to print, and closing."""

    @property
    def url(self) -> str:
        """Where the backend lives, with any password redacted."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class QueryStore(Protocol):
    """Queries, and their pages stored whole with their items."""

    @property
    def url(self) -> str: ...

    async def start_query(self, record: QueryRecord) -> int:
        """A new running query; with `record.batch_entry_id`, that entry is marked as running
        this query (its id and engine) in the same transaction."""
        ...

    async def resumable_query(self, record: QueryRecord, *, any_engine: bool) -> StoredQuery | None:
        """The latest interrupted or cancelled crawl of the same query, pages and options as
        `record`."""
        ...

    async def reopen_query(self, query_id: int) -> None:
        """Make an interrupted or cancelled query this process's running crawl again."""
        ...

    async def finish_query(
        self,
        query_id: int,
        *,
        status: str,
        stop_reasons: Mapping[str, str],
        errors: Mapping[str, str],
        relevance_threshold: float | None,
        entry_state: str | None = None,
        entry_detail: str = "",
        entry_detached: bool = False,
    ) -> StoredQuery:
        """Close the row; pages, items and the harvest rate (the share of items whose relevance
        reaches `relevance_threshold`) are counted from what was stored.

        `entry_state`: the state the query's batch entry takes, in the same transaction, with
        `entry_detail` saying why. `entry_detached`: the entry also lets go of the query and of
        the engine chosen for it, to be opened again as a new query on an engine chosen anew.
        """
        ...

    async def query(self, query_id: int) -> StoredQuery | None: ...

    async def query_ids(self, *, task_id: str | None = None, last: int | None = None) -> list[int]:
        """Ids of a task's queries, or of the `last` queries started, oldest first."""
        ...

    async def query_for_job(self, job_id: str) -> StoredQuery | None:
        """The latest query row a Scrapyd job wrote (its `_job` argument)."""
        ...

    async def task_harvest_rate(self, task_id: str) -> float | None:
        """Mean harvest rate of the task's earlier queries that recorded one, or None."""
        ...

    async def task_engines(self, task_id: str) -> dict[str, int]:
        """How many of the task's queries went to each SERP engine."""
        ...

    async def mark_cache_hit(self, query_id: int, answered_by: int) -> None: ...

    async def store_page(self, page: PageRecord, items: Sequence[ResultItem]) -> int:
        """Write one page's row and its items atomically; returns the items newly stored."""
        ...

    async def pages(self, query_id: int) -> list[StoredPage]: ...

    async def items(self, query_id: int) -> list[StoredItem]:
        """The query's stored items, by source and rank."""
        ...

    async def earlier_urls(self, query_id: int) -> set[str]:
        """Normalized URLs stored by earlier crawls of the same normalized query."""
        ...

    async def repeated_url_count(self, query_id: int) -> int:
        """Items of this query whose normalized URL an earlier crawl of the same query stored."""
        ...

    async def stale_parsers(self) -> list[StaleParser]:
        """Engines whose latest page read was layout_changed, by engine name."""
        ...


@runtime_checkable
class PaperStore(Protocol):
    """The one paper index across queries, and the citation graph between its papers."""

    async def save_papers(
        self,
        query_id: int,
        papers: Sequence[tuple[CanonicalPaper, Sequence[str]]],
        fused_ranks: Mapping[str, int],
        attribution: Mapping[str, int],
        *,
        min_abstract_chars: int,
    ) -> dict[str, int]:
        """Merge each paper into the one paper index (the stored papers sharing an identifier
        or a title block with it, by the canonical rules: backends.paper_saving), decide its
        evidence, link the query's items (by normalized URL) to its row, link its items no
        paper of its own has to the paper other queries' items at their URL are, store fused
        ranks and the query's attribution counts, in one transaction. Stored rows that one
        paper turns out to be become one row. Returns the attribution counts stored: `attribution`
        with the papers the query gained by other queries' items' URLs as `serp_only`."""
        ...

    async def copy_paper_links(self, from_query_id: int, to_query_id: int) -> None: ...

    async def papers_of(self, query_id: int) -> list[StoredPaper]: ...

    async def attribution_counts(self, query_id: int) -> dict[str, int]: ...

    async def papers_found(
        self,
        *,
        task_id: str | None = None,
        batch_id: int | None = None,
        query_id: int | None = None,
        selection_id: int | None = None,
        after_id: int = 0,
        limit: int,
    ) -> list[FoundPaper]:
        """One page of the papers a task's, a batch's or one query's queries found, or a
        selection chose (its hits): the first `limit` by id past `after_id` (the next page
        starts after its last one), each with the texts of those queries that found it (a
        selection's: every query that did) and its best rank among their results."""
        ...

    async def citation_seeds(self, query_id: int, *, limit: int) -> list[StoredPaper]:
        """The query's first `limit` papers by fused rank that are read from their abstract
        (evidence = abstract): where its citation graph starts."""
        ...

    async def store_citation_page(
        self, fetch: CitationFetch, papers: Sequence[CanonicalPaper], *, min_abstract_chars: int
    ) -> int:
        """One answer's papers at the other end of `fetch`'s list, in one transaction: each
        merged into the paper index like a query's papers (the rows it joins keep their
        attribution: backends.citation_saving), an edge between it and the fetched paper (its
        direction the list's, none to itself), and the fetch's row (`fetch.links` added to it,
        its status set). Returns the edges newly stored."""
        ...

    async def end_citation_fetches(self, fetches: Sequence[CitationFetch]) -> None:
        """Set the status and detail of each fetch's row (created with no links if missing)."""
        ...

    async def citation_fetches(self, query_id: int) -> list[CitationFetch]: ...

    async def citation_frontier(
        self, query_id: int, level: int, *, limit: int
    ) -> list[StoredPaper]:
        """Where the next level starts: the papers the query's `level` fetches reached that are
        read from their abstract and whose lists the query has not fetched, those with the most
        edges to them first, at most `limit`."""
        ...

    async def task_citation_graph(self, task_id: str) -> CitationGraph:
        """The task's papers (those its queries found, or found for the queries whose cached
        results they re-used) and the edges their fetches read, with the papers at their
        ends."""
        ...


@runtime_checkable
class LandingPageStore(Protocol):
    """The papers spider's work: papers queued for a fetch, and what their pages gave."""

    async def papers_to_read(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[PaperToRead]:
        """The papers a task's queries (or one query) found that are queued for a fetch
        (`evidence = fetch`), by id, each with the landing page last asked for it and what
        that gave."""
        ...

    async def record_landing_page(self, page: LandingPage, abstract: str | None) -> None:
        """Keep what asking for a paper's landing page gave (one row per paper and URL, its
        attempts counted). With `abstract`, the paper takes it and its evidence becomes
        `abstract`, in the same transaction."""
        ...

    async def landing_pages(
        self, *, task_id: str | None = None, query_id: int | None = None
    ) -> list[LandingPage]:
        """The landing pages asked for a task's (or a query's) papers, by paper id and URL."""
        ...


@runtime_checkable
class SearchCache(Protocol):
    """Search-level cache: a key to the query whose stored results answer it."""

    async def fresh_cache_entry(self, key: str, now: datetime) -> int | None: ...

    async def store_cache_entry(
        self, key: str, query_id: int, *, created_at: datetime, expires_at: datetime
    ) -> None: ...


@runtime_checkable
class InterventionQueue(Protocol):
    """Block pages (CAPTCHAs, access denied) queued for a person."""

    async def add_intervention(
        self, *, engine: str, url: str, query_id: int | None, kind: str, detail: str
    ) -> int: ...

    async def open_interventions(self) -> list[Intervention]: ...

    async def resolve_intervention(self, intervention_id: int) -> bool: ...


@runtime_checkable
class BatchStore(Protocol):
    """Batches as recorded, and their entries taken under leases by the crawls running them."""

    async def create_batch(
        self, *, source: str, content_hash: str, entries: Sequence[EntrySpec]
    ) -> BatchRecord:
        """Record a batch and its entries (rejected ones in state `rejected`)."""
        ...

    async def batch_by_hash(self, content_hash: str) -> BatchRecord | None:
        """The latest batch recorded from a file with this content."""
        ...

    async def take_entries(
        self,
        batch_id: int,
        limit: int,
        *,
        owner: str,
        lease_s: float,
        skip_engines: Collection[str] = (),
    ) -> list[BatchEntry]:
        """Up to `limit` entries to run, in position order, each leased to `owner`.

        Pending entries first, then running ones whose lease has run out (their worker died).
        Taken entries become running with one more attempt. Entries whose engine (named, or
        their query's; NO_ENGINE for those with none yet) is one of `skip_engines` are left
        where they are.
        """
        ...

    async def pending_engines(self, batch_id: int) -> dict[str, int]:
        """The batch's pending entries counted by engine (named, or their query's; NO_ENGINE
        for those with none yet)."""
        ...

    async def finish_entry(
        self, entry_id: int, *, state: str, query_id: int | None, detail: str = ""
    ) -> None: ...

    async def renew_entry_leases(
        self, entry_ids: Sequence[int], *, owner: str, lease_s: float
    ) -> None: ...

    async def record_rate_waits(self, batch_id: int, owner: str, waits: Mapping[str, int]) -> None:
        """The rate-limit waits per engine of crawl `owner` of the batch so far (its stats),
        so that progress read from the store, in any process, shows them."""
        ...


@runtime_checkable
class BatchReports(Protocol):
    """What is read of a batch: its record, its entries, and its figures aggregated by the
    store (progress display, batch report)."""

    async def batch(self, batch_id: int) -> BatchRecord | None: ...

    async def batch_entries(self, batch_id: int) -> list[BatchEntry]: ...

    async def batch_entries_in(
        self, batch_id: int, states: Sequence[str], *, limit: int
    ) -> tuple[list[BatchEntry], int]:
        """The first `limit` entries in one of `states`, by position, and how many there are."""
        ...

    async def batch_progress(self, batch_id: int) -> BatchProgress:
        """Entries by state, requests per source, items, blocks, rate-limit waits, and what the
        ETA needs."""
        ...

    async def batch_stop_reasons(self, batch_id: int) -> list[StopReasonCount]: ...

    async def batch_blocks(self, batch_id: int) -> list[BlockCount]: ...

    async def batch_requests_over_time(self, batch_id: int, bucket_s: int) -> list[RequestBucket]:
        """Requests per engine per time bucket of `bucket_s` seconds (cache replays left out)."""
        ...

    async def batch_depth_rates(self, batch_id: int) -> list[DepthRates]:
        """Novelty and harvest moments per source and page number (cache replays left out)."""
        ...

    async def batch_query_ids(self, batch_id: int) -> list[int]:
        """The batch's queries, in entry order."""
        ...


@runtime_checkable
class SelectionStore(Protocol):
    """`scrapy select`'s audit: each selection recorded whole and read back; and what tells a
    cached index of the store's documents that they may have changed."""

    async def record_selection(self, record: SelectionRecord) -> int:
        """Keep `record` (its candidates with it, in one transaction); its id."""
        ...

    async def selection(self, selection_id: int) -> SelectionRecord | None:
        """A selection as recorded, its candidates in their order; None when there is none."""
        ...

    async def documents_version(self, query_ids: Sequence[int]) -> str:
        """A text that changes whenever the documents of these queries (their papers and
        results) may have changed: the same text, the same documents."""
        ...


ROLES = (
    QueryStore,
    PaperStore,
    LandingPageStore,
    SearchCache,
    InterventionQueue,
    BatchStore,
    BatchReports,
    SelectionStore,
)


@runtime_checkable
class ResultStore(Backend, *ROLES, Protocol):  # type: ignore[misc]
    """The result store: one object playing every role (ROLES)."""


class Coordinator(Backend, Protocol):
    # -- daily quota -----------------------------------------------------------------------
    async def reserve_quota(self, engine: str, day: str, daily_limit: int | None) -> bool:
        """Take one unit of `engine`'s quota for `day` (YYYY-MM-DD, UTC); False when spent."""
        ...

    async def quota_used(self, engine: str, day: str) -> int: ...

    async def quota_used_on(self, day: str) -> dict[str, int]: ...

    async def engine_states(self, engines: Sequence[str], day: str) -> dict[str, EngineState]:
        """Each engine's breaker and its quota used on `day`, in one read (engine choice)."""
        ...

    # -- the per-engine send slot ----------------------------------------------------------
    async def claim_rate_slot(self, engine: str, lease_s: float) -> RateClaim:
        """Take `engine`'s send slot if it is free, leased for `lease_s` at most."""
        ...

    async def slot_released(self, engine: str, timeout_s: float) -> bool:
        """Whether `engine`'s slot, held by a request in flight at this process's last claim
        on it, was released since, by any process: waits for the release up to `timeout_s`."""
        ...

    async def release_rate_slot(self, engine: str, token: float, interval_s: float) -> None:
        """Free the slot taken with `token`: the next request may go `interval_s` from now."""
        ...

    # -- circuit breaker -------------------------------------------------------------------
    async def breaker_health(self, engine: str) -> Health: ...

    async def breaker_admit(self, engine: str, *, owner: str, trial_lease_s: float) -> Admission:
        """Decide on one request (lyra_crawl.politeness.breaker.admit), atomically."""
        ...

    async def breaker_success(self, engine: str, *, trial: bool) -> None: ...

    async def breaker_failure(
        self,
        engine: str,
        policy: BreakerPolicy,
        *,
        kind: str,
        trial: bool,
        retry_after_s: float | None,
    ) -> BreakerChange: ...
