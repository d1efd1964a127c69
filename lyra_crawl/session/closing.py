"""Close one query: its last pages stored, its papers merged into the paper index and linked,
its row finished, its cache entry and batch entry written, and its place in the crawl freed.

Runs once per query, when nothing of it is left (lyra_crawl.session.settling) or when the crawl
closes around it (lyra_crawl.session.extension). Stats:
`lyra/stop_reason/<reason>` per source, `lyra/papers/<attribution>` per canonical paper.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum

from lyra_crawl.paging.stop_rules import CUT_SHORT, StopReason
from lyra_crawl.records import QueryStatus
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.running_query import RunningQuery

logger = logging.getLogger(__name__)

# Stats key: the queries that got no result because every source failed (exit status 1).
FAILED_QUERIES = "lyra/queries/failed"


async def finish(crawl: CrawlSession, query: RunningQuery) -> None:
    """Close a query nothing of which is left: finished, or interrupted when a backend failed
    (left to `resume=true`)."""
    failed = crawl.storage_failure is not None
    await close_query(crawl, query, QueryStatus.INTERRUPTED if failed else QueryStatus.FINISHED)


async def close_query(crawl: CrawlSession, query: RunningQuery, status: QueryStatus) -> None:
    """Store what is left of the query, close it with `status`, and let the next one open."""
    query.closing = True
    try:
        await crawl.store_completed_pages(query)
        if not crawl.store_failed:
            await _close_row(crawl, query, status)
    finally:
        await crawl.unregister(query)


async def save_query_papers(crawl: CrawlSession, query: RunningQuery) -> None:
    """The query's papers merged and its items linked to them; once, when its pages are all
    stored (before its citation graph, which starts from them) or at its close."""
    if query.papers_saved:
        return
    query.papers_saved = True
    store = crawl.store
    query_id = query.query_id
    if query.cached_from is not None:
        await store.copy_paper_links(query.cached_from, query_id)
    elif len(query.papers):
        merged = query.papers.merged()
        counts = await store.save_papers(
            query_id,
            merged.papers,
            merged.fused_ranks,
            merged.attribution,
            min_abstract_chars=crawl.config.papers.min_abstract_chars,
        )
        for attribution, count in counts.items():
            if count:
                crawl.stats.inc_value(f"lyra/papers/{attribution}", count)


async def _close_row(crawl: CrawlSession, query: RunningQuery, status: QueryStatus) -> None:
    """Its papers saved, its row finished, its cache entry and batch entry written."""
    store = crawl.store
    query_id = query.query_id
    for reason in query.stop_reasons.values():
        crawl.stats.inc_value(f"lyra/stop_reason/{reason}")
    await save_query_papers(crawl, query)
    held = await _held_back(crawl, query) if status is QueryStatus.FINISHED else None
    if held is HeldBack.RESUMED:
        status = QueryStatus.INTERRUPTED
    failure = _failure(crawl, query) if status is QueryStatus.FINISHED else None
    # An interrupted or cancelled entry is taken again (by the batch's next run, or another
    # node's crawl), which resumes it; one held back ANEW is opened again as a new query.
    if failure is not None:
        entry_state = "failed"
    elif held is HeldBack.ANEW:
        entry_state = "pending"
    else:
        entry_state = "done" if status is QueryStatus.FINISHED else "pending"
    row = await store.finish_query(
        query_id,
        status=status.value,
        stop_reasons=query.stop_reasons,
        errors=query.errors,
        relevance_threshold=crawl.config.pagination.relevance_threshold,
        entry_state=entry_state,
        entry_detail=failure or "",
        entry_detached=held is HeldBack.ANEW,
    )
    arguments = query.arguments
    complete = status is QueryStatus.FINISHED and not any(
        StopReason(reason) in CUT_SHORT for reason in query.stop_reasons.values()
    )
    if complete and row.items and not query.cache_hit and arguments.cache != "off":
        now = datetime.now(UTC)
        await store.store_cache_entry(
            query.cache_key,
            query_id,
            created_at=now,
            expires_at=now + timedelta(hours=crawl.config.cache_ttl_hours),
        )
    logger.info(
        "query %d %s: %d pages, %d items, stop %s",
        query_id,
        status.value,
        row.pages_fetched,
        row.items,
        query.stop_reasons,
    )


class HeldBack(Enum):
    """How a batch entry whose engine refused its query goes back to pending."""

    # Its query is left interrupted, to go on after its last stored page.
    RESUMED = "resumed"
    # Nothing was answered and the frontier had chosen its SERP engine: the query ends as it
    # is, and the entry is opened again as a new query, on an engine the frontier chooses anew.
    ANEW = "anew"


async def _held_back(crawl: CrawlSession, query: RunningQuery) -> HeldBack | None:
    """Whether a batch entry's query goes back to pending instead of finishing, and how: its
    engine refused its next page (breaker open on a block, quota, hours: opened or spent by
    other queries after this one started) and still refuses. The batch holds the entry back
    until the engine takes requests again (lyra_crawl.session.launch). Only the engine the entry
    is held back by counts: a scholarly API's refusal ends its source. A breaker open on network
    failures refuses with `error` (not counted here): the engine is unreachable and the query
    fails, as it would alone."""
    engine = query.sources[0]
    if query.batch_entry_id is None or engine not in query.refused_engines:
        return None
    refusal = (await crawl.engine_refusals([engine])).get(engine)
    if refusal is None:
        return None
    answered = any(query.pages_done.values()) or any(
        start > query.first_page for start in query.start_pages.values()
    )
    # The frontier chose the SERP engine (an entry on scholarly APIs alone has no choice).
    chosen = query.engine == engine and query.arguments.engine is None
    if chosen and not answered:
        logger.info(
            "query %d got no page: %s refuses requests now (%s); its batch entry goes back to"
            " pending, for another engine",
            query.query_id,
            engine,
            refusal.reason,
        )
        return HeldBack.ANEW
    logger.info(
        "query %d goes back to its batch, pending: %s refuses requests now (%s); the batch"
        " resumes it after its last stored page once %s takes requests again",
        query.query_id,
        engine,
        refusal.reason,
        engine,
    )
    return HeldBack.RESUMED


def _every_source_failed(stop_reasons: Mapping[str, str], errors: Mapping[str, str]) -> str | None:
    """Why a query that got no result failed, when every one of its sources stopped on an
    error (a block, a quota or a layout change is the engines' answer, not a failure)."""
    if not stop_reasons or any(reason != StopReason.ERROR for reason in stop_reasons.values()):
        return None
    return (
        "every source failed ("
        + "; ".join(f"{source}: {errors.get(source, 'error')}" for source in sorted(stop_reasons))
        + ")"
    )


def _failure(crawl: CrawlSession, query: RunningQuery) -> str | None:
    """Why a finished query failed, said once with the fix and counted (the crawl exits 1):
    it got no result (every result enters its papers, a resumed query's stored ones too) and
    every one of its sources stopped on an error."""
    if len(query.papers):
        return None
    failure = _every_source_failed(query.stop_reasons, query.errors)
    if failure is not None:
        crawl.stats.inc_value(FAILED_QUERIES)
        logger.error(
            "query %d failed: %s; nothing was stored: check that the engines can be reached"
            " from here (network, proxy; LYRA_SIMULATOR_URL for the simulator) and run it again",
            query.query_id,
            failure,
        )
    return failure


async def put_back_entries(crawl: CrawlSession) -> None:
    """Entries taken but not opened before the crawl closed: pending again, for the next run."""
    while crawl.entries_taken:
        _, entry = crawl.entries_taken.popitem()
        await crawl.store.finish_entry(entry.id, state="pending", query_id=entry.query_id)
