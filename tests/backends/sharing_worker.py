"""One process of the sharing tests (test_coordination.py, test_postgres.py): opens the backends
on a SQLite file or the store a URL names (coordinated through the LYRA_COORDINATION_URL of its
environment, else that store), says `ready`, waits for `go` on stdin so every process starts
together, does its part and prints what it got as one JSON line. The `open` part says `ready`
first and opens the backends after `go`, so the processes race on opening.

    python -m tests.backends.sharing_worker DB_PATH quota ENGINE DAY LIMIT TRIES
    python -m tests.backends.sharing_worker DB_PATH rate ENGINE GRANTS INTERVAL_S HOLD_S
    python -m tests.backends.sharing_worker DB_PATH admit ENGINE TRIES
    python -m tests.backends.sharing_worker DB_PATH|DB_URL take BATCH_ID LIMIT
    python -m tests.backends.sharing_worker DB_PATH|DB_URL open
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import time
from typing import Any

from lyra_crawl.backends import Backends, with_backends


async def reserve(backends: Backends, engine: str, day: str, limit: str, tries: str) -> int:
    granted = 0
    for _ in range(int(tries)):
        granted += await backends.coordinator.reserve_quota(engine, day, int(limit))
    return granted


async def hold_slot(
    backends: Backends, engine: str, grants: str, interval_s: str, hold_s: str
) -> dict[str, Any]:
    """Each time the slot was held here: (just after the claim, just before the release); and
    how the waits for a slot held elsewhere ended: by word of its release, or at their timeout
    (30 s)."""
    coordinator = backends.coordinator
    held: list[tuple[float, float]] = []
    waits = {"released": 0, "timed_out": 0}
    while len(held) < int(grants):
        claim = await coordinator.claim_rate_slot(engine, lease_s=30.0)
        if not claim.granted:
            if not claim.held:
                await asyncio.sleep(claim.wait_s)
            elif await coordinator.slot_released(engine, timeout_s=30.0):
                waits["released"] += 1
            else:
                waits["timed_out"] += 1
            continue
        start = time.time()
        await asyncio.sleep(float(hold_s))
        held.append((start, time.time()))
        assert claim.token is not None
        await coordinator.release_rate_slot(engine, claim.token, float(interval_s))
    return {"held": held, "waits": waits}


async def admit(backends: Backends, engine: str, tries: str) -> int:
    """How many of `tries` requests, asking at once, the breaker admitted as its trial."""
    coordinator = backends.coordinator
    owner = f"{socket.gethostname()}:{os.getpid()}"
    # Read at once first, so a network client has a connection ready for each request: the
    # admissions below then race for real instead of queueing for connections.
    await asyncio.gather(*(coordinator.breaker_health(engine) for _ in range(int(tries))))
    admissions = await asyncio.gather(
        *(
            coordinator.breaker_admit(engine, owner=owner, trial_lease_s=60)
            for _ in range(int(tries))
        )
    )
    return sum(admission.trial for admission in admissions)


async def take(backends: Backends, batch_id: str, limit: str) -> list[int]:
    """Take entries as a crawl does and mark each done: a process that exits leaving entries
    running is a dead crawl, whose entries the others would rightly take again."""
    store = backends.store
    owner = f"{socket.gethostname()}:{os.getpid()}"
    taken: list[int] = []
    while entries := await store.take_entries(int(batch_id), int(limit), owner=owner, lease_s=60):
        for entry in entries:
            taken.append(entry.id)
            await store.finish_entry(entry.id, state="done", query_id=None)
    return taken


PARTS = {"quota": reserve, "rate": hold_slot, "admit": admit, "take": take}


async def main(store: str, part: str, *args: str) -> Any:
    settings = {
        ("LYRA_DB_URL" if "://" in store else "LYRA_DB_PATH"): store,
        "LYRA_COORDINATION_URL": os.environ.get("LYRA_COORDINATION_URL"),
    }
    if part == "open":
        print("ready", flush=True)
        sys.stdin.readline()
        return await with_backends(settings, lambda backends: backends.store.query_ids())

    async def work(backends: Backends) -> Any:
        print("ready", flush=True)
        sys.stdin.readline()
        return await PARTS[part](backends, *args)

    return await with_backends(settings, work)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(*sys.argv[1:]))), flush=True)
