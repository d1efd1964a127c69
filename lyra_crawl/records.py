"""The typed records the backends take and return. Pure: no driver type ever leaves a backend.

What a crawl writes (QueryRecord, PageRecord, the items) and what it reads back (StoredQuery,
StoredPage, StoredItem, StoredPaper, …). Stored records extend what was written, so a column
is named once here and once in each backend's SQL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from lyra_crawl.items import ResultItem
from lyra_crawl.politeness.breaker import Health


class BackendError(RuntimeError):
    """A backend cannot be opened, read or written; the message names it and the fix."""


# -- queries ---------------------------------------------------------------------------------


class QueryStatus(str, Enum):
    """A `queries` row's status."""

    RUNNING = "running"
    FINISHED = "finished"
    # Stopped on request before every source was done: Ctrl-C, SIGTERM, Scrapyd's cancel.
    CANCELLED = "cancelled"
    # Killed or crashed (marked when the next crawl opens the store), or closed by a backend
    # failure.
    INTERRUPTED = "interrupted"


# A crawl `-a resume=true` (or a batch taking its entry again) goes on with.
RESUMABLE_STATUSES = (QueryStatus.INTERRUPTED, QueryStatus.CANCELLED)


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


@dataclass(frozen=True)
class StaleParser:
    """An engine whose latest page read by its parser was in a layout the parser does not read.

    Pages read = ok, empty and layout_changed (a block or an error says nothing of the parser).
    `since` is when the first layout_changed page after the last ok or empty one was stored,
    `pages` how many there have been since; the latest is page `page_number` of `query_id`.
    """

    engine: str
    since: str
    pages: int
    query_id: int
    page_number: int
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
    """A `papers` row: one canonical paper across every query that found it.

    `evidence` is what it is read from: "abstract", or "fetch" with the best `fetch_url` and
    the `evidence_reason`; `fetch_urls` is every URL known to fetch it from, by kind
    (lyra_crawl.papers.evidence).
    """

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
    evidence: str | None = None
    fetch_url: str | None = None
    evidence_reason: str | None = None
    fetch_urls: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FoundPaper:
    """A paper as a task's, a batch's or one query's queries found it: `queries` are the texts
    of those that found it (each once, oldest query first), `first_rank` its best place among
    their results (a query's fused rank, else its rank in its source)."""

    paper: StoredPaper
    queries: tuple[str, ...]
    first_rank: int | None


# -- the citation graph ----------------------------------------------------------------------


@dataclass(frozen=True)
class CitationFetch:
    """One list (references or citations) of one paper at one source, fetched for a query: a
    `citation_fetches` row. `status`: running while pages come, then done, or why it stopped
    (quota, blocked, error, layout_changed, cancelled); `links`: papers read at the other end."""

    query_id: int
    paper_id: int
    source: str
    relation: str
    level: int
    status: str = "running"
    links: int = 0
    detail: str = ""
    fetched_at: str | None = None


@dataclass(frozen=True)
class CitationEdge:
    """A `citations` row: `citing` cites `cited`, as `source` says."""

    citing: int
    cited: int
    source: str
    fetched_at: str = ""


@dataclass(frozen=True)
class CitationGraph:
    """A task's citation graph: its papers (search results and the papers its fetches reached)
    and the edges its fetches read."""

    papers: list[StoredPaper]
    edges: list[CitationEdge]


@dataclass(frozen=True)
class PaperToRead:
    """A paper queued for a fetch (`evidence = fetch`), with the page last asked for it and
    what that gave (lyra_crawl.papers.landing_fetch decides whether to ask again)."""

    paper_id: int
    title: str
    fetch_url: str | None
    fetch_urls: Mapping[str, str] = field(default_factory=dict)
    last_url: str | None = None
    last_outcome: str | None = None


@dataclass(frozen=True)
class LandingPage:
    """A paper's landing page as last asked for (a `landing_pages` row): the outcome
    (lyra_crawl.papers.landing.LandingOutcome), the metadata field the abstract came from."""

    paper_id: int
    url: str
    outcome: str
    detail: str = ""
    http_status: int | None = None
    metadata_field: str | None = None
    attempts: int = 1
    fetched_at: str = ""


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

    @property
    def engine(self) -> str | None:
        """The engine the entry names (`engine:`), if any."""
        return self.arguments.get("engine") or None


@dataclass(frozen=True)
class BatchRecord:
    id: int
    source: str
    content_hash: str
    created_at: str
    entries: int


# A batch entry's states, in the order a reader takes them in.
ENTRY_STATES = ("done", "running", "pending", "failed", "rejected")
# The engine of an entry that has none yet (neither named nor given to its query), where
# ResultStore.take_entries and pending_engines name entries by engine.
NO_ENGINE = ""


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


# -- batch figures (progress display, batch report), aggregated by the store ----------------


@dataclass(frozen=True)
class BatchProgress:
    """A batch's figures at one moment, counted by the store in a handful of indexed queries.

    `requests` counts the pages fetched per source (one request each; retries and requests
    that got no answer are not stored); pages a cache entry replayed made no request and are
    counted apart. `finished_pages` and `running_pages` split those requests per source
    between the entries a crawl finished (done or failed) and those running now: the progress
    display's ETA is made from them.
    """

    batch_id: int
    entries: Mapping[str, int]
    # Done when recorded: a fresh cache entry (another query) answered them; no crawl ran.
    cached_entries: int = 0
    queries: int = 0
    requests: Mapping[str, int] = field(default_factory=dict)
    replayed_pages: int = 0
    items: int = 0
    blocks: Mapping[str, int] = field(default_factory=dict)
    finished_pages: Mapping[str, int] = field(default_factory=dict)
    running_pages: Mapping[str, int] = field(default_factory=dict)
    # Rate-limit waits per engine, summed over the batch's crawls as each last recorded them.
    rate_waits: Mapping[str, int] = field(default_factory=dict)
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def total_entries(self) -> int:
        return sum(self.entries.values())

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    def count(self, state: str) -> int:
        return self.entries.get(state, 0)

    @property
    def crawled_entries(self) -> int:
        """Entries a crawl finished (done or failed), the cache-answered ones left out."""
        return self.count("done") + self.count("failed") - self.cached_entries


@dataclass(frozen=True)
class StopReasonCount:
    """How many of a batch's queries stopped `source` for `reason`."""

    source: str
    reason: str
    queries: int


@dataclass(frozen=True)
class BlockCount:
    """Block pages (interventions queued) of a batch, per engine and kind."""

    engine: str
    kind: str
    pages: int


@dataclass(frozen=True)
class RequestBucket:
    """Requests of one engine stored in the time bucket starting at `start` (epoch seconds)."""

    engine: str
    start: int
    requests: int


@dataclass(frozen=True)
class Moments:
    """Count, sum and sum of squares of a rate: mean and spread, combinable across groups."""

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.total + other.total, self.squares + other.squares)

    @property
    def mean(self) -> float | None:
        return self.total / self.n if self.n else None

    @property
    def sd(self) -> float | None:
        """Population standard deviation; None without values."""
        if not self.n:
            return None
        mean = self.total / self.n
        return max(self.squares / self.n - mean * mean, 0.0) ** 0.5


@dataclass(frozen=True)
class DepthRates:
    """Novelty and harvest of one source's pages at one page number, over a batch's queries."""

    source: str
    page_number: int
    pages: int
    novelty: Moments
    harvest: Moments


# -- selections (`scrapy select`'s audit) ------------------------------------------------------


@dataclass(frozen=True)
class StageScores:
    """A candidate's score at each stage of a selection; None where the stage did not score
    it."""

    keyword: float | None = None
    keyword_rank: int | None = None
    # The share of the question's words the chunk has (what the no-CrossEncoder floor reads).
    keyword_coverage: float | None = None
    semantic: float | None = None
    semantic_rank: int | None = None
    fused: float = 0.0
    fused_rank: int = 0
    cross_encoder: float | None = None
    llm: float | None = None
    final: float | None = None


@dataclass(frozen=True)
class StageRun:
    """One stage of a selection: whether it ran, with which model, or why it was skipped."""

    name: str
    ran: bool
    detail: str = ""
    model: str = ""


@dataclass(frozen=True, kw_only=True)
class SelectionCorpus:
    """What a selection ran on: the documents of a task's queries, a batch's, some queries'
    (`query_ids`) or the whole store's (`whole_store`), or of a corpus file (`file`); none of
    these: documents given to the selector in Python."""

    task_id: str | None = None
    batch_id: int | None = None
    query_ids: tuple[int, ...] = ()
    whole_store: bool = False
    file: str | None = None

    @property
    def in_store(self) -> bool:
        """Whether its documents are the store's (its papers are rows of `papers`)."""
        return (
            self.whole_store
            or self.task_id is not None
            or self.batch_id is not None
            or bool(self.query_ids)
        )

    def __str__(self) -> str:
        if self.task_id is not None:
            return f"task {self.task_id!r}"
        if self.batch_id is not None:
            return f"batch {self.batch_id}"
        if self.query_ids:
            return f"quer{'ies' if len(self.query_ids) > 1 else 'y'} " + ", ".join(
                map(str, self.query_ids)
            )
        if self.whole_store:
            return "the whole store"
        return f"corpus {self.file}" if self.file else "documents given in Python"


@dataclass(frozen=True)
class CandidateRecord:
    """A candidate as a selection scored it: its document (and, over the store, the paper it
    is: `paper_id`, which follows the paper into the row a later merge keeps), the chunk that
    scored best, every stage's score, and its rank among the hits (None: not chosen)."""

    document_id: str
    chunk_index: int
    scores: StageScores
    final_rank: int | None
    paper_id: int | None = None


@dataclass(frozen=True)
class SelectionRecord:
    """One selection as kept for audit (no document text): the question, the facets detected
    and carried, what they kept, each stage's model and version or why it was skipped, every
    candidate's scores and final rank, the corpus it ran on and that corpus's version, when;
    `id` once stored (the `selections` table)."""

    question: str
    conversation: str | None
    search_text: str
    facets_named: tuple[str, ...]
    facets_carried: tuple[str, ...]
    facet_note: str
    documents_kept: int
    documents_total: int
    stages: tuple[StageRun, ...]
    candidates: tuple[CandidateRecord, ...]
    reason: str
    corpus: SelectionCorpus
    corpus_version: str
    selected_at: str
    id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def hits(self) -> list[CandidateRecord]:
        """The candidates chosen, by final rank."""
        chosen = [c for c in self.candidates if c.final_rank is not None]
        return sorted(chosen, key=lambda c: c.final_rank or 0)
