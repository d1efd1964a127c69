"""Which queries a crawl runs, and when each starts: one query, or a stored batch's entries.

`-a query=…` opens one query. `-a batch=ID` takes the batch's entries from the store under a
lease, in position order, and keeps at most `-a concurrency=N` of them running: the next entry
opens when a running one closes, so a batch of any size holds only N queries in memory. An
entry whose arguments no longer pass, or that an engine it goes to cannot take, is marked
rejected, one whose query cannot start failed, each with why, and the rest go on.

An entry whose engine (named in it, or its interrupted query's) refuses requests right now is
not taken (lyra_crawl.politeness.refusals): the crawl runs the others meanwhile, and takes it
once the engine is back; entries without engine are not taken while every engine the frontier
may give them refuses requests. When only such entries are left, the crawl waits for an engine
whose breaker cools down (looking again every ENTRY_POLL_S) and ends when the rest wait for a
daily quota or allowed hours, those entries still pending, with a WARNING saying when to run the
batch again: started, each would end at once with no page, its source stopped by the refusal. A
running query whose engine starts refusing goes back to pending the same way
(lyra_crawl.session.closing), so the launch ends only once none of its own queries is open.

Several crawls may run one batch (one Scrapyd job per node, sharing the store): each takes
entries as it has room, so entries spread by who is free. A crawl with nothing left to take
stays while other crawls still run entries, looking again every ENTRY_POLL_S: when one of them
dies, its entries are taken again once their lease ends (at once when it ran on this host).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping

from lyra_crawl.politeness.refusals import ANY_ENGINE, EngineRefusal, every_engine_refusal
from lyra_crawl.politeness.selection import normal_engines
from lyra_crawl.query.arguments import (
    ArgumentError,
    CrawlArguments,
    LaunchPlan,
    SingleQuery,
    parse_crawl_arguments,
    usable_engines,
)
from lyra_crawl.records import NO_ENGINE, BackendError, BatchEntry
from lyra_crawl.session.closing import put_back_entries
from lyra_crawl.session.crawl import CrawlSession
from lyra_crawl.session.opening import (
    NoEngineAvailable,
    OpenedQuery,
    QueryNotOpened,
    QueryRejected,
    open_query,
)
from lyra_crawl.session.settling import settle

logger = logging.getLogger(__name__)

# How long a taken entry stays this crawl's without renewal; renewed every third of it.
ENTRY_LEASE_S = 300.0
# How often a crawl with nothing left to take looks for entries whose crawl died.
ENTRY_POLL_S = 1.0


async def launch(crawl: CrawlSession, plan: LaunchPlan) -> AsyncIterator[OpenedQuery]:
    """Each query as it opens; the caller sends its first requests before asking for more.
    Once the crawl closes (a CloseSpider limit, a signal), nothing more is opened."""
    try:
        async for opened in _launch(crawl, plan):
            yield opened
    except (BackendError, RuntimeError):
        # Closed while this read the store: its backends are closed under the read.
        if not crawl.closed:
            raise


async def _launch(crawl: CrawlSession, plan: LaunchPlan) -> AsyncIterator[OpenedQuery]:
    if isinstance(plan, SingleQuery):
        opened = await _open(crawl, plan.arguments, None)
        if opened is not None:
            yield opened
            await settle(crawl, opened.query)
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
        if crawl.closed:  # its queries closing made room: their entries may be pending again
            return
        refused = await _refusals(crawl)
        entries = await crawl.store.take_entries(
            plan.batch_id,
            plan.concurrency - len(crawl.queries),
            owner=crawl.owner,
            lease_s=ENTRY_LEASE_S,
            skip_engines=refused.keys(),
        )
        if not entries:
            # This crawl's own queries may yet go back to pending (their engine refused them).
            if not (
                crawl.queries
                or await _running_elsewhere(crawl, plan.batch_id)
                or await _waiting_for_engines(crawl, plan.batch_id, refused)
            ):
                return
            await crawl.wait_for_a_close(ENTRY_POLL_S)
            continue
        # Until opened, the crawl's close puts them back: Scrapy may stop asking this generator
        # for more (a signal, a CloseSpider limit) while it holds some. Taken after the close
        # put its own back, they are put back here.
        crawl.entries_taken.update((entry.id, entry) for entry in entries)
        for entry in entries:
            if crawl.closed:
                await put_back_entries(crawl)
                return
            opened = await _open_entry(crawl, entry, plan.job_id)
            crawl.entries_taken.pop(entry.id, None)
            if opened is not None:
                yield opened
                await settle(crawl, opened.query)


async def _refusals(crawl: CrawlSession) -> dict[str, EngineRefusal]:
    """The engines that refuse requests now by the crawl's rules, and NO_ENGINE when every
    engine the frontier may give an entry without one does: their entries are held back."""
    usable = usable_engines(crawl.config)
    refused = await crawl.engine_refusals(usable)
    every = every_engine_refusal(normal_engines(crawl.config, usable), refused)
    if every is not None:
        refused[NO_ENGINE] = every
    return refused


async def _running_elsewhere(crawl: CrawlSession, batch_id: int) -> bool:
    """Whether entries of the batch are running in other crawls (that may yet die)."""
    _, running = await crawl.store.batch_entries_in(batch_id, ["running"], limit=0)
    own = sum(1 for query in crawl.queries.values() if query.batch_entry_id is not None)
    return running > own


async def _waiting_for_engines(
    crawl: CrawlSession, batch_id: int, refused: Mapping[str, EngineRefusal]
) -> bool:
    """Whether pending entries wait for an engine whose breaker cools down (each said once);
    those waiting for a quota or hours are said to stay pending."""
    waiting = {
        refused[engine]: count
        for engine, count in (await crawl.store.pending_engines(batch_id)).items()
        if engine in refused
    }
    for refusal, count in waiting.items():
        entries = (
            f"1 entry of batch {batch_id}" if count == 1 else f"{count} entries of batch {batch_id}"
        )
        verb = "s" if count == 1 else ""
        if refusal.ends_soon:
            crawl.warn_once(
                f"waiting:{refusal.reason}",
                "%s wait%s for %s: %s; the crawl waits for it (Ctrl-C stops it; the batch "
                "run again goes on)",
                entries,
                verb,
                refusal.engine,
                refusal.reason,
            )
        else:
            crawl.warn_once(
                f"left:{refusal.reason}",
                "%s stay%s pending: %s; run the batch again then",
                entries,
                verb,
                refusal.reason
                if refusal.engine == ANY_ENGINE
                else f"{refusal.engine} refuses requests now ({refusal.reason})",
            )
    return any(refusal.ends_soon for refusal in waiting)


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
        await crawl.store.finish_entry(entry.id, state="rejected", query_id=None, detail=str(exc))
        return None
    return await _open(crawl, arguments, entry)


async def _open(
    crawl: CrawlSession, arguments: CrawlArguments, entry: BatchEntry | None
) -> OpenedQuery | None:
    try:
        return await open_query(crawl, arguments, entry)
    except NoEngineAvailable as exc:
        # Taken with another (a half-open breaker's one trial): held back now, as the next take
        # holds back its like; else it fails below.
        if entry is not None and NO_ENGINE in await _refusals(crawl):
            logger.info("batch entry %d goes back to pending: %s", entry.position, exc)
            await crawl.store.finish_entry(entry.id, state="pending", query_id=None)
            return None
        return await _not_opened(crawl, exc, entry)
    except QueryNotOpened as exc:
        return await _not_opened(crawl, exc, entry)


async def _not_opened(crawl: CrawlSession, exc: QueryNotOpened, entry: BatchEntry | None) -> None:
    """A query that cannot start: said, and its entry rejected (an engine cannot take it) or
    failed, with why."""
    logger.error("%s", exc)
    if entry is not None:
        state = "rejected" if isinstance(exc, QueryRejected) else "failed"
        await crawl.store.finish_entry(
            entry.id, state=state, query_id=entry.query_id, detail=str(exc)
        )
