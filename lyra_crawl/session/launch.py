"""Which queries a crawl runs, and when each starts: one query, or a stored batch's entries.

`-a query=…` opens one query. `-a batch=ID` takes the batch's entries from the store under a
lease, in position order, and keeps at most `-a concurrency=N` of them running: the next entry
opens when a running one closes, so a batch of any size holds only N queries in memory. An
entry whose arguments no longer pass or whose query cannot start is marked failed and the rest
go on.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from lyra_crawl.backends.records import BatchEntry
from lyra_crawl.query.arguments import (
    ArgumentError,
    CrawlArguments,
    LaunchPlan,
    SingleQuery,
    parse_crawl_arguments,
)
from lyra_crawl.session.opening import OpenedQuery, QueryNotOpened, open_query

if TYPE_CHECKING:
    from lyra_crawl.session.crawl import CrawlSession

logger = logging.getLogger(__name__)

# How long a taken entry stays this crawl's without renewal; renewed every third of it.
ENTRY_LEASE_S = 300.0


async def launch(crawl: CrawlSession, plan: LaunchPlan) -> AsyncIterator[OpenedQuery]:
    """Each query as it opens; the caller sends its first requests before asking for more."""
    if isinstance(plan, SingleQuery):
        opened = await _open(crawl, plan.arguments, None)
        if opened is not None:
            yield opened
            await crawl.settle(opened.session)
        return
    if await crawl.store.batch(plan.batch_id) is None:
        logger.error(
            "batch %d is not in %s: record it with `scrapy batch FILE` first",
            plan.batch_id,
            crawl.store.url,
        )
        return
    crawl.keep_entry_leases(ENTRY_LEASE_S)
    while True:
        await crawl.wait_for_room(plan.concurrency)
        entries = await crawl.store.take_entries(
            plan.batch_id,
            plan.concurrency - len(crawl.queries),
            owner=crawl.owner,
            lease_s=ENTRY_LEASE_S,
        )
        if not entries:
            return
        for entry in entries:
            opened = await _open_entry(crawl, entry, plan.job_id)
            if opened is not None:
                yield opened
                await crawl.settle(opened.session)


async def _open_entry(
    crawl: CrawlSession, entry: BatchEntry, job_id: str | None
) -> OpenedQuery | None:
    raw = dict(entry.arguments)
    if entry.query_id is not None:
        # Taken again after its crawl was interrupted: go on from its stored pages.
        raw.setdefault("resume", "true")
    if job_id:
        raw["_job"] = job_id
    try:
        arguments = parse_crawl_arguments(raw, crawl.config)
    except ArgumentError as exc:
        logger.error("batch entry %d: %s", entry.position, exc)
        await crawl.store.finish_entry(entry.id, state="failed", query_id=None, detail=str(exc))
        return None
    return await _open(crawl, arguments, entry)


async def _open(
    crawl: CrawlSession, arguments: CrawlArguments, entry: BatchEntry | None
) -> OpenedQuery | None:
    try:
        return await open_query(crawl, arguments, entry)
    except QueryNotOpened as exc:
        logger.error("%s", exc)
        if entry is not None:
            await crawl.store.finish_entry(
                entry.id, state="failed", query_id=entry.query_id, detail=str(exc)
            )
        return None
