"""Close one query: its papers merged into the paper index and linked, its row finished, its
cache entry written.

Runs once per query, when its last page is stored (or when the crawl closes around it). Stats:
`lyra/stop_reason/<reason>` per source, `lyra/papers/<attribution>` per canonical paper.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING

from lyra_crawl.backends.records import QueryStatus
from lyra_crawl.paging.stop_rules import CUT_SHORT, StopReason
from lyra_crawl.session.opening import engine_refusals
from lyra_crawl.session.query import QuerySession

if TYPE_CHECKING:
    from lyra_crawl.session.crawl import CrawlSession

logger = logging.getLogger(__name__)

# Stats key: the queries that got no result because every source failed (exit status 1).
FAILED_QUERIES = "lyra/queries/failed"


async def save_query_papers(crawl: CrawlSession, session: QuerySession) -> None:
    """The query's papers merged and its items linked to them; once, when its pages are all
    stored (before its citation graph, which starts from them) or at its close."""
    if session.papers_saved:
        return
    session.papers_saved = True
    store = crawl.store
    query_id = session.query_id
    if session.cached_from is not None:
        await store.copy_paper_links(session.cached_from, query_id)
    elif len(session.papers):
        merged = session.papers.merged()
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


async def close_query(crawl: CrawlSession, session: QuerySession, status: QueryStatus) -> None:
    store = crawl.store
    query_id = session.query_id
    for reason in session.stop_reasons.values():
        crawl.stats.inc_value(f"lyra/stop_reason/{reason}")
    await save_query_papers(crawl, session)
    held = await _held_back(crawl, session) if status is QueryStatus.FINISHED else None
    if held is HeldBack.RESUMED:
        status = QueryStatus.INTERRUPTED
    failure = _failure(crawl, session) if status is QueryStatus.FINISHED else None
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
        stop_reasons=session.stop_reasons,
        errors=session.errors,
        relevance_threshold=crawl.config.pagination.relevance_threshold,
        entry_state=entry_state,
        entry_detail=failure or "",
        entry_detached=held is HeldBack.ANEW,
    )
    arguments = session.arguments
    complete = status is QueryStatus.FINISHED and not any(
        StopReason(reason) in CUT_SHORT for reason in session.stop_reasons.values()
    )
    if complete and row.items and not session.cache_hit and arguments.cache != "off":
        now = datetime.now(UTC)
        await store.store_cache_entry(
            session.cache_key,
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
        session.stop_reasons,
    )


class HeldBack(Enum):
    """How a batch entry whose engine refused its query goes back to pending."""

    # Its query is left interrupted, to go on after its last stored page.
    RESUMED = "resumed"
    # Nothing was answered and the frontier had chosen its SERP engine: the query ends as it
    # is, and the entry is opened again as a new query, on an engine the frontier chooses anew.
    ANEW = "anew"


async def _held_back(crawl: CrawlSession, session: QuerySession) -> HeldBack | None:
    """Whether a batch entry's query goes back to pending instead of finishing, and how: its
    engine refused its next page (breaker open on a block, quota, hours: opened or spent by
    other queries after this one started) and still refuses. The batch holds the entry back
    until the engine takes requests again (lyra_crawl.session.launch). Only the engine the entry
    is held back by counts: a scholarly API's refusal ends its source. A breaker open on network
    failures refuses with `error` (not counted here): the engine is unreachable and the query
    fails, as it would alone."""
    engine = session.sources[0]
    if session.batch_entry_id is None or engine not in session.refused_engines:
        return None
    refusal = (await engine_refusals(crawl, [engine])).get(engine)
    if refusal is None:
        return None
    answered = any(session.pages_done.values()) or any(
        start > session.first_page for start in session.start_pages.values()
    )
    # The frontier chose the SERP engine (an entry on scholarly APIs alone has no choice).
    chosen = session.engine == engine and session.arguments.engine is None
    if chosen and not answered:
        logger.info(
            "query %d got no page: %s refuses requests now (%s); its batch entry goes back to"
            " pending, for another engine",
            session.query_id,
            engine,
            refusal.reason,
        )
        return HeldBack.ANEW
    logger.info(
        "query %d goes back to its batch, pending: %s refuses requests now (%s); the batch"
        " resumes it after its last stored page once %s takes requests again",
        session.query_id,
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


def _failure(crawl: CrawlSession, session: QuerySession) -> str | None:
    """Why a finished query failed, said once with the fix and counted (the crawl exits 1):
    it got no result (every result enters its papers, a resumed query's stored ones too) and
    every one of its sources stopped on an error."""
    if len(session.papers):
        return None
    failure = _every_source_failed(session.stop_reasons, session.errors)
    if failure is not None:
        crawl.stats.inc_value(FAILED_QUERIES)
        logger.error(
            "query %d failed: %s; nothing was stored: check that the engines can be reached"
            " from here (network, proxy; LYRA_SIMULATOR_URL for the simulator) and run it again",
            session.query_id,
            failure,
        )
    return failure
