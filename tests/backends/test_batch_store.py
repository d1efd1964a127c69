"""The BatchStore and BatchReports roles on every store backend (a real SQLite file, a real
PostgreSQL): batches recorded, entries taken once under leases, pending entries by engine,
entry states, leases renewed and ended with their crawl, each crawl's rate-limit waits."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from lyra_crawl.query.invariants import UntruthfulRecord
from lyra_crawl.records import NO_ENGINE, EntrySpec, PageRecord
from tests.backends.test_store import item, record


def test_batch_entries_are_taken_once_under_a_lease_and_again_when_it_runs_out(store):
    async def work(backends):
        store_ = backends.store
        batch = await recorded_batch(
            store_,
            EntrySpec(1, "a", {"query": "a"}),
            EntrySpec(2, "b", {"query": "b"}),
            EntrySpec(3, "c", {}, rejected="entry 3: bad"),
            EntrySpec(4, "d", {"query": "d"}),
        )
        first = await store_.take_entries(batch.id, 2, owner="one", lease_s=60)
        second = await store_.take_entries(batch.id, 5, owner="two", lease_s=0)
        nothing = await store_.take_entries(batch.id, 5, owner="three", lease_s=60)
        again = await store_.take_entries(batch.id, 5, owner="three", lease_s=60)
        await store_.finish_entry(first[0].id, state="done", query_id=None)
        states = {e.position: e.state for e in await store_.batch_entries(batch.id)}
        return batch, first, second, nothing, again, states

    batch, first, second, nothing, again, states = store.run(work)

    assert batch.entries == 4
    assert [e.position for e in first] == [1, 2]
    assert [e.position for e in second] == [4], "rejected entries are never taken"
    # Entry 4's lease was 0 s: it ran out at once, so the next taker gets it again.
    assert [e.position for e in nothing] == [4] and nothing[0].attempts == 2
    assert again == []
    assert states == {1: "done", 2: "running", 3: "rejected", 4: "running"}


def test_a_take_gives_pending_entries_first_then_those_whose_lease_ran_out(store):
    async def work(backends):
        store_ = backends.store
        batch = await recorded_batch(
            store_, *(EntrySpec(n, f"q{n}", {"query": f"q{n}"}) for n in range(1, 5))
        )
        ran_out = await store_.take_entries(batch.id, 2, owner="one", lease_s=0)
        mixed = await store_.take_entries(batch.id, 3, owner="two", lease_s=60)
        rest = await store_.take_entries(batch.id, 5, owner="three", lease_s=60)
        return ran_out, mixed, rest

    ran_out, mixed, rest = store.run(work)

    assert [e.position for e in ran_out] == [1, 2]
    assert [e.position for e in mixed] == [3, 4, 1]
    assert [(e.position, e.attempts) for e in rest] == [(2, 2)]


def test_entries_naming_an_engine_to_skip_are_left_pending_and_counted_by_engine(store):
    async def work(backends):
        store_ = backends.store
        batch = await recorded_batch(
            store_,
            EntrySpec(1, "a", {"query": "a", "engine": "mojeek"}),
            EntrySpec(2, "b", {"query": "b"}),
            EntrySpec(3, "c", {"query": "c", "engine": "brave"}),
            EntrySpec(4, "d", {"query": "d", "engine": "mojeek"}),
            EntrySpec(5, "e", {"query": "e", "engine": "mojeek"}, rejected="entry 5: bad"),
        )
        skipped = await store_.take_entries(
            batch.id, 5, owner="one", lease_s=0, skip_engines={"mojeek"}
        )
        waiting = await store_.pending_engines(batch.id)
        # Entries 2 and 3 ran out of lease at once: taken again, unless their engine is skipped.
        again = await store_.take_entries(
            batch.id, 5, owner="two", lease_s=60, skip_engines=["brave", "mojeek"]
        )
        rest = await store_.take_entries(batch.id, 5, owner="two", lease_s=60)
        return skipped, waiting, again, rest, await store_.pending_engines(batch.id)

    skipped, waiting, again, rest, none_left = store.run(work)

    assert [(e.position, e.engine) for e in skipped] == [(2, None), (3, "brave")]
    assert waiting == {"mojeek": 2}, "pending entries by the engine they name, rejected ones not"
    assert [e.position for e in again] == [2]
    assert [e.position for e in rest] == [1, 4, 3], "pending ones, then 3 whose lease ran out"
    assert none_left == {}


def test_entries_without_engine_are_skipped_and_counted_as_no_engine(store):
    async def work(backends):
        store_ = backends.store
        batch = await recorded_batch(
            store_,
            EntrySpec(1, "a", {"query": "a"}),
            EntrySpec(2, "b", {"query": "b", "engine": "mojeek"}),
            EntrySpec(3, "c", {"query": "c"}),
        )
        waiting = await store_.pending_engines(batch.id)
        named = await store_.take_entries(
            batch.id, 5, owner="one", lease_s=60, skip_engines=[NO_ENGINE]
        )
        rest = await store_.take_entries(batch.id, 5, owner="one", lease_s=60)
        return waiting, named, rest

    waiting, named, rest = store.run(work)

    assert waiting == {NO_ENGINE: 2, "mojeek": 1}
    assert [e.position for e in named] == [2]
    assert [e.position for e in rest] == [1, 3]


async def recorded_batch(store_, *entries: EntrySpec):
    """A new batch of `entries` (file b.yaml, content hash h)."""
    return await store_.create_batch(source="b.yaml", content_hash="h", entries=list(entries))


async def one_entry_taken(store_, *, lease_s: float):
    """A new batch of one entry, and that entry taken by "one" under a lease of `lease_s`."""
    batch = await recorded_batch(store_, EntrySpec(1, "a", {"query": "a"}))
    (entry,) = await store_.take_entries(batch.id, 1, owner="one", lease_s=lease_s)
    return batch, entry


def test_a_finished_query_gives_its_batch_entry_a_state_and_why_in_one_step(store):
    async def work(backends):
        store_ = backends.store
        batch, entry = await one_entry_taken(store_, lease_s=60)
        query_id = await store_.start_query(record(batch_entry_id=entry.id))
        await store_.finish_query(
            query_id,
            status="finished",
            stop_reasons={"mojeek": "error"},
            errors={"mojeek": "Connection refused"},
            relevance_threshold=None,
            entry_state="failed",
            entry_detail="every source failed (mojeek: Connection refused)",
        )
        return query_id, await store_.batch_entries(batch.id)

    query_id, (entry,) = store.run(work)

    assert (entry.state, entry.query_id) == ("failed", query_id)
    assert entry.detail == "every source failed (mojeek: Connection refused)"


def test_a_query_end_or_entry_state_that_would_lie_is_refused_and_not_written(store):
    async def work(backends):
        store_ = backends.store
        batch, entry = await one_entry_taken(store_, lease_s=60)
        query_id = await store_.start_query(
            record(batch_entry_id=entry.id, sources="serp,openalex")
        )
        await store_.store_page(
            PageRecord(query_id, "mojeek", 1, "ok", 1), [item(query_id, 1, "https://a.example/")]
        )

        async def finish(status: str, **stop_reasons: str):
            return await store_.finish_query(
                query_id,
                status=status,
                stop_reasons=stop_reasons,
                errors={},
                relevance_threshold=None,
                entry_state="done",
            )

        lies = []
        for status, stop_reasons in [
            ("finished", {"mojeek": "max_pages", "openalex": "max_pages"}),
            ("cancelled", {"mojeek": "novelty", "openalex": "empty_page"}),
            ("finished", {"mojeek": "max_pages"}),
            ("finished", {"mojeek": "max_pages", "openalex": "cancelled"}),
            ("finished", {"mojeek": "done", "openalex": "error"}),
            ("over", {"mojeek": "max_pages", "openalex": "error"}),
        ]:
            with pytest.raises(UntruthfulRecord) as caught:
                await finish(status, **stop_reasons)
            lies.append(str(caught.value))
        with pytest.raises(UntruthfulRecord) as caught:
            await store_.finish_entry(entry.id, state="failed", query_id=None)
        lies.append(str(caught.value))
        unwritten = (await store_.query(query_id), await store_.batch_entries(batch.id))
        truth = await finish("finished", mojeek="max_pages", openalex="error")
        return lies, unwritten, truth, await store_.batch_entries(batch.id)

    lies, (row, (entry,)), truth, (done,) = store.run(work)

    assert lies == [
        f"query {row.id}: openalex stopped for max_pages but no page of it is stored",
        f"query {row.id}: openalex stopped for empty_page but no page of it is stored",
        f"query {row.id}: it is finished but openalex never stopped",
        f"query {row.id}: it is finished but openalex was cancelled",
        f"query {row.id}: mojeek stopped for 'done', which is no stop reason",
        f"query {row.id}: status 'over' is none of cancelled, finished, interrupted, running",
        "an entry failed must say why",
    ]
    assert (row.status, row.stop_reason, entry.state) == ("running", {}, "running")
    assert (truth.status, truth.pages_fetched, done.state) == ("finished", 1, "done")


def test_each_crawl_s_rate_waits_are_kept_at_their_last_total_and_summed_per_engine(store):
    async def work(backends):
        store_ = backends.store
        batch = await recorded_batch(store_, EntrySpec(1, "a", {"query": "a"}))
        other = await recorded_batch(store_, EntrySpec(1, "b", {"query": "b"}))
        await store_.record_rate_waits(batch.id, "host:1", {"mojeek": 3, "bing": 1})
        await store_.record_rate_waits(batch.id, "host:1", {"mojeek": 4, "bing": 1})
        await store_.record_rate_waits(batch.id, "host:2", {"mojeek": 2})
        await store_.record_rate_waits(other.id, "host:1", {"mojeek": 50})
        return (await store_.batch_progress(batch.id)).rate_waits

    assert store.run(work) == {"bing": 1, "mojeek": 6}


def test_an_entry_detached_from_its_query_is_pending_with_neither_query_nor_engine(store):
    async def work(backends):
        store_ = backends.store
        batch, entry = await one_entry_taken(store_, lease_s=60)
        query_id = await store_.start_query(record(batch_entry_id=entry.id))
        (started,) = await store_.batch_entries(batch.id)
        await store_.finish_query(
            query_id,
            status="finished",
            stop_reasons={"mojeek": "blocked"},
            errors={},
            relevance_threshold=None,
            entry_state="pending",
            entry_detached=True,
        )
        (detached,) = await store_.batch_entries(batch.id)
        (taken,) = await store_.take_entries(batch.id, 1, owner="two", lease_s=60)
        return query_id, started, detached, taken, await store_.query(query_id)

    query_id, started, detached, taken, query = store.run(work)

    assert (started.query_id, started.engine) == (query_id, "mojeek")
    assert (detached.state, detached.query_id, detached.engine) == ("pending", None, None)
    assert (taken.position, taken.query_id) == (1, None), "opened again as a new query"
    assert query is not None and query.status == "finished", "the query row stays as it ended"


def test_an_entry_taken_again_interrupts_the_query_its_lost_crawl_left_running(store):
    async def work(backends):
        store_ = backends.store
        batch, entry = await one_entry_taken(store_, lease_s=0)
        query_id = await store_.start_query(record(batch_entry_id=entry.id))
        before = (await store_.query(query_id)).status
        (again,) = await store_.take_entries(batch.id, 1, owner="two", lease_s=60)
        return query_id, before, again, await store_.query(query_id)

    query_id, before, again, query = store.run(work)

    assert before == "running"
    # Interrupted, so the crawl that took the entry resumes that query (resume=true).
    assert (again.query_id, again.attempts) == (query_id, 2)
    assert query.status == "interrupted" and query.finished_at is not None


def test_a_renewed_lease_keeps_an_entry_from_other_takers(store):
    async def work(backends):
        store_ = backends.store
        batch, entry = await one_entry_taken(store_, lease_s=0)
        await store_.renew_entry_leases([entry.id], owner="one", lease_s=60)
        kept = await store_.take_entries(batch.id, 1, owner="two", lease_s=60)
        # Only the owner renews: another's renewal leaves the lease as it is.
        await store_.renew_entry_leases([entry.id], owner="two", lease_s=0)
        await store_.renew_entry_leases([entry.id], owner="one", lease_s=0)
        return kept, await store_.take_entries(batch.id, 1, owner="two", lease_s=60)

    kept, taken = store.run(work)

    assert kept == []
    assert [(e.position, e.attempts) for e in taken] == [(1, 2)]


@pytest.mark.subprocess
def test_a_dead_crawls_entries_are_taken_again_at_once_and_other_owners_wait(store):
    host = socket.gethostname()
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()

    async def work(backends):
        store_ = backends.store
        batch = await store_.create_batch(
            source="b.yaml",
            content_hash="h",
            entries=[EntrySpec(1, "a", {"query": "a"}), EntrySpec(2, "b", {"query": "b"})],
        )
        await store_.take_entries(batch.id, 1, owner=f"{host}:{gone.pid}", lease_s=60)
        await store_.take_entries(batch.id, 1, owner=f"{host}:worker-b", lease_s=60)
        return await store_.take_entries(batch.id, 5, owner=f"{host}:{os.getpid()}", lease_s=60)

    again = store.run(work)

    # Entry 1's crawl is gone: taken again. Entry 2's owner is no pid to check: its lease holds.
    assert [(entry.position, entry.attempts) for entry in again] == [(1, 2)]
