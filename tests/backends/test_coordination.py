"""The Coordinator on each backend, a real SQLite file and a real Redis: quota, the send slot's
lease and spacing, breakers; and several processes sharing one (quota never exceeded, one holder
of a slot at a time, one half-open trial), and one SQLite file (batch entries handed out once)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TypeVar

import pytest

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.config import BreakerPolicy
from lyra_crawl.politeness.breaker import BreakerState
from lyra_crawl.records import EntrySpec
from tests.backends.lock_holders import FileLockHolder
from tests.conftest import in_own_loop, with_store

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
DAY = "2026-01-01"


@pytest.fixture(params=["sqlite", "redis"])
def coordination_url(request: pytest.FixtureRequest) -> str | None:
    """The Coordinator under test: the SQLite file itself (None), or a real Redis."""
    return request.getfixturevalue("redis_url") if request.param == "redis" else None


def test_quota_is_taken_unit_by_unit_up_to_the_daily_limit(tmp_path, coordination_url):
    async def work(backends: Backends):
        coordinator = backends.coordinator
        limited = [await coordinator.reserve_quota("mojeek", DAY, 2) for _ in range(3)]
        closed = await coordinator.reserve_quota("bing", DAY, 0)
        unlimited = [await coordinator.reserve_quota("qwant", DAY, None) for _ in range(4)]
        states = await coordinator.engine_states(["mojeek", "bing", "qwant"], DAY)
        return (
            limited,
            closed,
            unlimited,
            await coordinator.quota_used("mojeek", DAY),
            await coordinator.quota_used("mojeek", "2026-01-02"),
            await coordinator.quota_used_on(DAY),
            {engine: state.used_today for engine, state in states.items()},
        )

    limited, closed, unlimited, used, next_day, used_on, states = with_store(
        tmp_path / "db.sqlite3", work, coordination_url=coordination_url
    )

    assert limited == [True, True, False]
    assert closed is False, "a daily limit of 0 lets nothing through"
    assert unlimited == [True] * 4
    assert (used, next_day) == (2, 0)
    assert used_on == {"mojeek": 2, "qwant": 4}
    assert states == {"mojeek": 2, "bing": 0, "qwant": 4}


def test_the_send_slot_is_leased_then_spaced_and_a_stale_token_frees_nothing(
    tmp_path, coordination_url
):
    async def work(backends: Backends):
        coordinator = backends.coordinator
        first = await coordinator.claim_rate_slot("mojeek", lease_s=30)
        in_flight = await coordinator.claim_rate_slot("mojeek", lease_s=30)
        assert first.token is not None
        await coordinator.release_rate_slot("mojeek", first.token, interval_s=20)
        spacing = await coordinator.claim_rate_slot("mojeek", lease_s=30)

        # A lease that ran out is someone else's once they claim: the first holder's late
        # release must leave the new lease alone.
        ran_out = await coordinator.claim_rate_slot("bing", lease_s=0)
        taken_over = await coordinator.claim_rate_slot("bing", lease_s=30)
        assert ran_out.token is not None and taken_over.token is not None
        await coordinator.release_rate_slot("bing", ran_out.token, interval_s=0)
        still_held = await coordinator.claim_rate_slot("bing", lease_s=30)
        await coordinator.release_rate_slot("bing", taken_over.token, interval_s=0)
        free = await coordinator.claim_rate_slot("bing", lease_s=30)
        return first, in_flight, spacing, ran_out, taken_over, still_held, free

    first, in_flight, spacing, ran_out, taken_over, still_held, free = with_store(
        tmp_path / "db.sqlite3", work, coordination_url=coordination_url
    )

    assert first.granted and (first.wait_s, first.held) == (0.0, False)
    assert not in_flight.granted and in_flight.held and 29 < in_flight.wait_s <= 30
    assert not spacing.granted and not spacing.held and 19 < spacing.wait_s <= 20
    assert ran_out.granted and taken_over.granted and taken_over.token != ran_out.token
    assert not still_held.granted and still_held.held
    assert free.granted


def test_a_claim_refused_for_a_held_slot_hears_of_its_release_and_only_of_the_next_one(
    tmp_path, coordination_url
):
    """Two holders of the backends on one file (and one Redis), as two processes are: the one
    refused a slot the other holds hears of its release, even if the release came before it
    began to wait; a claim forgets releases before it; a stale token's release is no release."""
    settings = {
        "LYRA_DB_PATH": str(tmp_path / "db.sqlite3"),
        "LYRA_COORDINATION_URL": coordination_url,
    }

    async def work(holder: Backends, waiter: Backends):
        first = await holder.coordinator.claim_rate_slot("mojeek", lease_s=30)
        refused = await waiter.coordinator.claim_rate_slot("mojeek", lease_s=30)
        nothing_yet = await waiter.coordinator.slot_released("mojeek", timeout_s=0.05)
        assert first.token is not None
        await holder.coordinator.release_rate_slot("mojeek", first.token, interval_s=0)
        heard = await waiter.coordinator.slot_released("mojeek", timeout_s=30)
        granted = await waiter.coordinator.claim_rate_slot("mojeek", lease_s=30)
        forgotten = await waiter.coordinator.slot_released("mojeek", timeout_s=0.05)

        refused_again = await holder.coordinator.claim_rate_slot("mojeek", lease_s=30)
        await waiter.coordinator.release_rate_slot("mojeek", first.token, interval_s=0)  # stale
        stale = await holder.coordinator.slot_released("mojeek", timeout_s=0.05)
        return refused, nothing_yet, heard, granted, forgotten, refused_again, stale

    async def both():
        return await with_backends(
            settings, lambda holder: with_backends(settings, lambda waiter: work(holder, waiter))
        )

    refused, nothing_yet, heard, granted, forgotten, refused_again, stale = in_own_loop(both())

    assert refused.held and not nothing_yet
    assert heard, "the release was told to the process refused the slot"
    assert granted.granted and not forgotten
    assert refused_again.held and not stale


def test_a_slot_released_while_the_file_is_busy_is_free_one_interval_after_its_answer(tmp_path):
    """SQLite: a release that waits for the file's write lock (another process writing) frees
    the slot 1/qps after it was asked for, not after it got the lock, so the releasing
    process's next claim, made 1/qps after its answer, finds the slot free."""
    path = tmp_path / "db.sqlite3"
    interval_s = 0.3

    async def work(backends: Backends):
        coordinator = backends.coordinator
        claim = await coordinator.claim_rate_slot("mojeek", lease_s=30)
        assert claim.token is not None
        with FileLockHolder(path) as holder:
            release = asyncio.ensure_future(
                coordinator.release_rate_slot("mojeek", claim.token, interval_s=interval_s)
            )
            await holder.waited_for()
            # Not a wait for an event (waited_for was): the release's wait for the lock,
            # twice its interval, is what the test is about.
            await asyncio.sleep(2 * interval_s)
        await release
        return await coordinator.claim_rate_slot("mojeek", lease_s=30)

    after = with_store(path, work)

    assert after.granted, after


def test_the_breaker_opens_admits_one_trial_and_closes_on_its_success(tmp_path, coordination_url):
    blocks_for_a_day = BreakerPolicy(cooldown_s={"captcha": 86400.0})
    no_cooldown = BreakerPolicy(cooldown_s={"captcha": 0.0})

    async def work(backends: Backends):
        coordinator = backends.coordinator
        closed = await coordinator.breaker_admit("mojeek", owner="a", trial_lease_s=60)
        await coordinator.breaker_success("mojeek", trial=False)
        untouched = await coordinator.breaker_health("mojeek")
        tripped = await coordinator.breaker_failure(
            "mojeek", blocks_for_a_day, kind="captcha", trial=False, retry_after_s=None
        )
        refused = await coordinator.breaker_admit("mojeek", owner="a", trial_lease_s=60)

        await coordinator.breaker_failure(
            "bing", no_cooldown, kind="captcha", trial=False, retry_after_s=None
        )
        trial = await coordinator.breaker_admit("bing", owner="a", trial_lease_s=60)
        second = await coordinator.breaker_admit("bing", owner="b", trial_lease_s=60)
        half_open = await coordinator.breaker_health("bing")
        await coordinator.breaker_success("bing", trial=True)
        healed = await coordinator.breaker_health("bing")
        return closed, untouched, tripped, refused, trial, second, half_open, healed

    closed, untouched, tripped, refused, trial, second, half_open, healed = with_store(
        tmp_path / "db.sqlite3", work, coordination_url=coordination_url
    )

    assert closed.allowed and not closed.trial
    assert untouched.state is BreakerState.CLOSED and untouched.trips == 0
    assert tripped.tripped and tripped.before.state is BreakerState.CLOSED
    assert tripped.after.state is BreakerState.OPEN and tripped.after.last_reason == "captcha"
    assert not refused.allowed and "open" in refused.reason
    assert trial.allowed and trial.trial
    assert not second.allowed, "one trial at a time"
    assert (half_open.state, half_open.trial_owner) == (BreakerState.HALF_OPEN, "a")
    assert healed.state is BreakerState.CLOSED and healed.trips == 0


# -- several processes on one backend -------------------------------------------------------


@dataclass(frozen=True)
class Shared:
    """What the processes share: a SQLite file, and a coordinator (that same file, or a Redis)."""

    db_path: Path
    coordination_url: str | None = None

    def run(self, work: Callable[[Backends], Awaitable[T]]) -> T:
        return with_store(self.db_path, work, coordination_url=self.coordination_url)


def run_together(
    store: Shared | Path | str, *parts: list[str], env: dict[str, str] | None = None
) -> list:
    """Start one sharing_worker per part on the store (shared backends, a SQLite file, or a URL),
    let them go at once, and return what each printed; `env` over this environment."""
    if isinstance(store, Shared):
        env = {"LYRA_COORDINATION_URL": store.coordination_url or "", **(env or {})}
        store = store.db_path
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.backends.sharing_worker", str(store), *part],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for part in parts
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n", process.stderr
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, err
            results.append(json.loads(out))
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


async def numbered_batch(backends: Backends, count: int) -> tuple[int, list[int]]:
    """A new batch of `count` entries: its id and its entries' ids."""
    batch = await backends.store.create_batch(
        source="b.yaml",
        content_hash="h",
        entries=[EntrySpec(n, f"q{n}", {"query": f"q{n}"}) for n in range(1, count + 1)],
    )
    return batch.id, [entry.id for entry in await backends.store.batch_entries(batch.id)]


@pytest.fixture
def shared_db(tmp_path) -> Shared:
    """A database file created beforehand, so the processes race on work, not on the schema."""
    shared = Shared(tmp_path / "shared.sqlite3")
    shared.run(lambda backends: backends.coordinator.quota_used("mojeek", DAY))
    return shared


@pytest.fixture
def shared(shared_db: Shared, coordination_url: str | None) -> Shared:
    """The shared file, coordinated through itself or through a real Redis."""
    return Shared(shared_db.db_path, coordination_url)


@pytest.mark.subprocess
def test_processes_sharing_a_coordinator_never_exceed_the_daily_limit(shared):
    granted = run_together(shared, *[["quota", "mojeek", DAY, "25", "20"]] * 4)

    assert sum(granted) == 25
    assert shared.run(lambda b: b.coordinator.quota_used("mojeek", DAY)) == 25


@pytest.mark.subprocess
def test_processes_sharing_a_coordinator_hold_the_send_slot_one_at_a_time_and_spaced(shared):
    interval_s = 0.01
    ran = run_together(shared, *[["rate", "mojeek", "12", str(interval_s), "0.002"]] * 3)

    held = [process["held"] for process in ran]
    assert all(len(turns) == 12 for turns in held), "every process got its turns"
    waits = [process["waits"] for process in ran]
    # A process refused a slot another holds is told of its release: no wait lasts to its
    # 30 s timeout (which would also take this test minutes).
    assert sum(w["released"] for w in waits) >= 1, waits
    assert all(w["timed_out"] == 0 for w in waits), waits
    turns = sorted(turn for process in held for turn in process)
    for (_, released), (claimed, _) in pairwise(turns):
        # The next holder claimed at least 1/qps after the previous one released: the leases
        # never overlap, and the spacing runs from the release.
        assert claimed >= released + interval_s


@pytest.mark.subprocess
def test_processes_sharing_a_coordinator_get_one_half_open_trial_between_them(shared):
    no_cooldown = BreakerPolicy(cooldown_s={"captcha": 0.0})
    change = shared.run(
        lambda b: b.coordinator.breaker_failure(
            "mojeek", no_cooldown, kind="captcha", trial=False, retry_after_s=None
        )
    )
    assert change.tripped

    trials = run_together(shared, *[["admit", "mojeek", "10"]] * 4)

    assert sum(trials) == 1, "the cool-down is over: exactly one request becomes the trial"
    health = shared.run(lambda b: b.coordinator.breaker_health("mojeek"))
    assert health.state is BreakerState.HALF_OPEN


@pytest.mark.subprocess
def test_processes_taking_batch_entries_never_take_the_same_one(shared_db):
    batch_id, entry_ids = shared_db.run(lambda backends: numbered_batch(backends, 600))

    taken = run_together(shared_db, *[["take", str(batch_id), "2"]] * 3)

    every = [entry_id for process in taken for entry_id in process]
    assert sorted(every) == sorted(entry_ids), "every entry taken, none twice"
    entries = shared_db.run(lambda b: b.store.batch_entries(batch_id))
    assert {(entry.state, entry.attempts) for entry in entries} == {("done", 1)}
