"""Open one query: its engine chosen, its row started (or an interrupted or cancelled one
reopened), its cache consulted, and the first page of each source planned.

The result is a RunningQuery registered with the crawl, plus what the spider sends first:
the page requests to make, or, for a query answered from the cache, the stored results to
replay (no request at all).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import PageRequest
from lyra_crawl.items import ResultItem
from lyra_crawl.paging.relevance import RelevanceConfig
from lyra_crawl.paging.source_paging import SourcePaging
from lyra_crawl.paging.stop_rules import (
    FINAL_STOP_REASONS,
    PaginationConfig,
    PaginationStrategy,
    StopReason,
    Strategy,
)
from lyra_crawl.papers.collector import paper_record
from lyra_crawl.politeness.refusals import HOURS
from lyra_crawl.politeness.selection import SelectionDecision, TaskShare, choose_engine
from lyra_crawl.query.arguments import (
    SERP_SOURCE,
    CrawlArguments,
    crawl_sources,
    query_misfits,
    usable_engines,
)
from lyra_crawl.query.cache_key import cache_key
from lyra_crawl.query.text import normalize_query
from lyra_crawl.records import BatchEntry, QueryRecord, StoredQuery
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.replay import replayed_pages
from lyra_crawl.session.request_state import RequestKind
from lyra_crawl.session.running_query import RunningQuery

logger = logging.getLogger(__name__)


class QueryNotOpened(RuntimeError):
    """The query cannot start (no engine available, a resume refused); the message says why."""


class NoEngineAvailable(QueryNotOpened):
    """No engine the frontier may choose takes requests now."""


class QueryRejected(QueryNotOpened):
    """An engine the query goes to cannot take it (its length, region, …): it never starts."""


@dataclass(frozen=True)
class PagePlan:
    """A page for the spider to request."""

    spec: EngineSpec
    page: PageRequest
    page_number: int
    kind: RequestKind = RequestKind.PAGE


@dataclass
class OpenedQuery:
    query: RunningQuery
    first_pages: list[PagePlan] = field(default_factory=list)
    replay: list[ResultItem] = field(default_factory=list)
    # Sources of a resumed query whose every page is stored already: no request; the pagination
    # middleware stops them (`stop_with_pages_stored`).
    pages_stored: list[str] = field(default_factory=list)


async def open_query(
    crawl: CrawlSession, arguments: CrawlArguments, entry: BatchEntry | None = None
) -> OpenedQuery:
    """Open and register one query; QueryNotOpened when it cannot start."""
    normalized = normalize_query(arguments.query)
    resumed = await _resumable(crawl, arguments, normalized) if arguments.resume else None
    engine, selection = await _engine(crawl, arguments, resumed)
    sources = _taking(crawl, arguments, crawl_sources(engine, arguments.sources))
    start_pages: dict[str, int] = {}
    if resumed is not None:
        try:
            start_pages = await _resume_pages(crawl, resumed, sources, arguments.serp_page)
        except QueryNotOpened as exc:
            if entry is None:
                raise
            # A batch entry must end done: its interrupted query stays as it was stored, and
            # the entry is crawled again, from its first page, as a new query.
            logger.warning("batch entry %d: %s; crawling it as a new query", entry.position, exc)
            resumed = None
            engine, selection = await _engine(crawl, arguments, None)
            sources = _taking(crawl, arguments, crawl_sources(engine, arguments.sources))
    strategy = PaginationStrategy(
        PaginationConfig(
            serp_max_pages=arguments.serp_max_pages,
            min_novelty_rate=crawl.config.pagination.min_novelty_rate,
            min_harvest_rate=crawl.config.pagination.min_harvest_rate,
            strategy=Strategy(arguments.strategy),
        )
    )
    key = cache_key(normalized, sources, arguments.time_range, arguments.serp_max_pages)
    record = _query_record(arguments, normalized, sources[0], selection, entry)
    if resumed is None:
        query_id = await crawl.store.start_query(record)
    else:
        query_id = resumed.id
    query = RunningQuery(
        arguments=arguments,
        query_id=query_id,
        engine=engine,
        sources=sources,
        pagination=strategy,
        paging={},
        start_pages={},
        cache_key=key,
        batch_entry_id=entry.id if entry else None,
    )
    if resumed is not None:
        await _resume(crawl, query, resumed, start_pages)
    cached = None if resumed else await _fresh_cache_entry(crawl, query)
    crawl.register(query)
    if cached is not None:
        return OpenedQuery(query, replay=await _replay(crawl, query, cached))
    await _start_paging(crawl, query, normalized)
    logger.info(
        "query %d: %r on %s, pages %d..%s",
        query_id,
        arguments.query,
        ", ".join(sources),
        arguments.serp_page,
        {
            source: strategy.last_page(arguments.serp_page, paging.page_cap)
            for source, paging in query.paging.items()
        },
    )
    for source, why in arguments.sources_left_out.items():
        logger.warning(
            "query %d: %s left out of the default sources: %s (name sources to choose them)",
            query_id,
            source,
            why,
        )
    pages_stored = [name for name in query.sources if _pages_stored(query, name)]
    first_pages = _first_pages(crawl, query, pages_stored)
    return OpenedQuery(query, first_pages=first_pages, pages_stored=pages_stored)


def _query_record(
    arguments: CrawlArguments,
    normalized: str,
    engine: str,
    selection: SelectionDecision | None,
    entry: BatchEntry | None,
) -> QueryRecord:
    return QueryRecord(
        query_text=arguments.query,
        normalized_query=normalized,
        engine=engine,
        sources=",".join(arguments.sources),
        serp_page=arguments.serp_page,
        serp_max_pages=arguments.serp_max_pages,
        strategy=arguments.strategy,
        time_range=arguments.time_range,
        region=arguments.region,
        task_id=arguments.task_id,
        job_id=arguments.job_id,
        selection=_selection_dict(arguments, selection),
        batch_entry_id=entry.id if entry else None,
    )


def _selection_dict(
    arguments: CrawlArguments, selection: SelectionDecision | None
) -> dict[str, Any]:
    """How the query's engines were chosen, with the default sources it left out and why."""
    chosen = selection.as_dict() if selection else {"reason": "no SERP engine in sources"}
    if arguments.sources_left_out:
        chosen["sources_left_out"] = dict(arguments.sources_left_out)
    return chosen


# -- engine choice ---------------------------------------------------------------------------


def _taking(crawl: CrawlSession, arguments: CrawlArguments, sources: list[str]) -> list[str]:
    """`sources`, once each is known to take the query, whoever picked it (named, resumed,
    chosen by the frontier): QueryRejected, before any row or request, when one cannot."""
    misfits = query_misfits(crawl.config, sources, arguments)
    if misfits:
        raise QueryRejected(next(iter(misfits.values())))
    return sources


async def _engine(
    crawl: CrawlSession, arguments: CrawlArguments, resumed: StoredQuery | None
) -> tuple[str | None, SelectionDecision | None]:
    """The query's SERP engine and how it was chosen; (None, None) without `serp` source."""
    if SERP_SOURCE not in arguments.sources:
        return None, None
    threshold = crawl.config.lastmile.threshold
    if resumed is not None:
        # Pagination never switches engine: the interrupted crawl's engine goes on.
        decision = SelectionDecision(resumed.engine, False, "resumed", None, threshold)
    else:
        harvest_rate = arguments.harvest_rate
        if harvest_rate is None and arguments.task_id is not None:
            harvest_rate = await crawl.store.task_harvest_rate(arguments.task_id)
        if arguments.engine is not None:
            decision = SelectionDecision(
                arguments.engine, False, "explicit", harvest_rate, threshold
            )
        else:
            usable = usable_engines(crawl.config)
            unfit = query_misfits(crawl.config, usable, arguments)
            available = await _available(crawl, [name for name in usable if name not in unfit])
            decision = choose_engine(
                crawl.config,
                usable=usable,
                available=available,
                harvest_rate=harvest_rate,
                now=datetime.now(UTC),
                queued=crawl.queued_requests(),
                task_share=await _task_share(crawl, arguments.task_id),
                unfit=unfit,
            )
    logger.info("engine choice: %s", decision.as_dict())
    if decision.engine is None:
        raise NoEngineAvailable(
            f"no engine available ({decision.reason}): pass -a engine=NAME or check "
            "`scrapy engines`"
        )
    return decision.engine, decision


async def _task_share(crawl: CrawlSession, task_id: str | None) -> TaskShare | None:
    if task_id is None:
        return None
    engines = await crawl.store.task_engines(task_id)
    lastmile = sum(count for name, count in engines.items() if name in crawl.config.lastmile.order)
    return TaskShare(lastmile=lastmile, total=sum(engines.values()))


async def _available(crawl: CrawlSession, engines: list[str]) -> list[str]:
    """Those of `engines` not refused right now by their breaker or their daily quota, as the
    crawl enforces them (the choice weighs their allowed hours itself, and names them in its
    reason)."""
    refused = await crawl.engine_refusals(engines)
    return [name for name in engines if name not in refused or refused[name].kind == HOURS]


# -- resume (-a resume=true) -----------------------------------------------------------------
# The interrupted or cancelled queries row is reopened, not copied: each source's pages stay
# where they are and it goes on after its last stored page, so every page is stored once under
# one query id. A source that had stopped for good (FINAL_STOP_REASONS) stays stopped.


async def _resumable(
    crawl: CrawlSession, arguments: CrawlArguments, normalized: str
) -> StoredQuery | None:
    engine = arguments.engine
    record = _query_record(arguments, normalized, engine or "", None, None)
    row = await crawl.store.resumable_query(record, any_engine=engine is None)
    if row is None:
        logger.info(
            "resume=true: no interrupted or cancelled crawl of %r, starting afresh", normalized
        )
    return row


async def _resume_pages(
    crawl: CrawlSession, resumed: StoredQuery, sources: list[str], first_page: int
) -> dict[str, int]:
    """Each unfinished source's page after its last stored one; QueryNotOpened when a source
    that hands a token from page to page would have to start past its first page."""
    query_id = resumed.id
    stored = {(page.source, page.page_number) for page in await crawl.store.pages(query_id)}
    starts = {}
    for source in sources:
        if source in _finished_sources(resumed):
            continue
        following = first_page
        while (source, following) in stored:
            following += 1
        if crawl.config.engine(source).next_page == "form" and following > first_page:
            # Page N+1 needs the token of page N's response, which was never stored.
            raise QueryNotOpened(
                f"query {query_id} cannot resume at page {following}: engine {source} hands a "
                "token from page to page; run again without resume=true to crawl it from page "
                f"{first_page}"
            )
        starts[source] = following
    return starts


def _finished_sources(resumed: StoredQuery) -> dict[str, str]:
    """The sources of a stored query that had stopped for good, with their reasons."""
    return {
        source: reason
        for source, reason in resumed.stop_reason.items()
        if reason in FINAL_STOP_REASONS
    }


async def _resume(
    crawl: CrawlSession,
    query: RunningQuery,
    resumed: StoredQuery,
    start_pages: dict[str, int],
) -> None:
    """Each unfinished source from `start_pages`; the stored items join the dedupe and merge."""
    store = crawl.store
    query_id = query.query_id
    query.start_pages.update(start_pages)
    query.stop_reasons.update(_finished_sources(resumed))
    await store.reopen_query(query_id)
    for item in await store.items(query_id):
        query.dedupe.remember(item.normalized_url or "", item.doi, item.source, item.rank or 0)
        query.papers.add(item.normalized_url or "", paper_record(item), earlier=True)
    logger.info(
        "query %d resumed at pages %s (stopped before: %s)",
        query_id,
        query.start_pages,
        query.stop_reasons or "none",
    )


# -- cache -----------------------------------------------------------------------------------


async def _fresh_cache_entry(crawl: CrawlSession, query: RunningQuery) -> int | None:
    if query.arguments.cache != "use":
        return None
    return await crawl.store.fresh_cache_entry(query.cache_key, datetime.now(UTC))


async def _replay(crawl: CrawlSession, query: RunningQuery, cached: int) -> list[ResultItem]:
    """The stored results of query `cached`, as this query's; its pages opened to receive them."""
    logger.info("query %d: answered from cache (query %d), no request sent", query.query_id, cached)
    store = crawl.store
    query.cached_from = cached
    await store.mark_cache_hit(query.query_id, cached)
    cached_row = await store.query(cached)
    query.stop_reasons.update(cached_row.stop_reason if cached_row else {})
    crawl.stats.inc_value("lyra/cache/hit")
    replay: list[ResultItem] = []
    for page, items in await replayed_pages(store, cached, query.query_id):
        query.ledger.open_page(page, expected=len(items))
        replay.extend(items)
    # Sources the cached crawl never reached say so, so the query can close.
    for source in query.sources:
        query.stop_reasons.setdefault(source, StopReason.MAX_PAGES.value)
    return replay


# -- the first page of each source -----------------------------------------------------------


async def _start_paging(crawl: CrawlSession, query: RunningQuery, normalized: str) -> None:
    arguments = query.arguments
    relevance = RelevanceConfig(threshold=crawl.config.pagination.relevance_threshold)
    seen_before: set[str] = set()
    if arguments.novelty_scope == "history":
        seen_before = await crawl.store.earlier_urls(query.query_id)
    for source in query.sources:
        policy = crawl.config.policy(source)
        enabled = policy.pagination_enabled
        if not enabled and (arguments.serp_max_pages > 1 or arguments.strategy == "exhaustive"):
            crawl.warn_once(
                f"pagination_disabled:{source}",
                "engine %s has pagination_enabled: false in engines.yaml: its queries get "
                "page %d only (serp_max_pages=%d asks for more); set it to true there to page",
                source,
                arguments.serp_page,
                arguments.serp_max_pages,
            )
        query.paging[source] = SourcePaging.start(
            arguments.query,
            relevance,
            first_page=arguments.serp_page,
            page_cap=crawl.config.engine(source).max_pages if enabled else arguments.serp_page,
            pagination_enabled=enabled,
            seen_before=seen_before,
        )


def _first_pages(
    crawl: CrawlSession, query: RunningQuery, pages_stored: list[str]
) -> list[PagePlan]:
    plans = []
    for source in query.sources:
        if source in pages_stored:
            continue
        plan = _first_page(crawl, query, crawl.config.engine(source))
        if plan is not None:
            plans.append(plan)
    return plans


def _pages_stored(query: RunningQuery, source: str) -> bool:
    """Whether a resumed query's unfinished source has its every page stored already."""
    if source in query.stop_reasons:
        return False
    first = query.first_page
    last = query.pagination.last_page(first, query.paging[source].page_cap)
    return query.start_pages.get(source, first) > last


def _first_page(crawl: CrawlSession, query: RunningQuery, spec: EngineSpec) -> PagePlan | None:
    """Page `serp_page` of one source, or its token page first; None when it has stopped
    already (a resumed query's finished source)."""
    if spec.name in query.stop_reasons:
        return None
    first = query.first_page
    if spec.token_page:
        return PagePlan(spec, PageRequest(url=spec.token_page), first, RequestKind.TOKEN_PAGE)
    start = query.start_pages.get(spec.name, first)
    # The query was checked against the engine before it opened (_taking): this builds.
    return PagePlan(spec, crawl.page_request(query, spec, start), start)
