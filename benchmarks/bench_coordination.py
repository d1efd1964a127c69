"""Coordination cost per request, SQLite and Redis side by side.

- coordination_ms_per_request_sqlite / _redis: milliseconds for the Coordinator steps one
  request takes on its way out and back (reserve_quota, breaker_admit, claim_rate_slot,
  release_rate_slot, breaker_success), one request after another, on a SQLite file and on a
  real redis-server on loopback (started here, as the tests start it).
- coordination_redis_vs_sqlite: the Redis figure divided by the SQLite one.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.backends.protocols import Coordinator
from tests.servers.redis import running_redis

ENGINE = "mojeek"
DAY = "2026-01-01"
REQUESTS = 2000
WARM_UP = 50


async def _requests(coordinator: Coordinator, count: int) -> None:
    for _ in range(count):
        await coordinator.reserve_quota(ENGINE, DAY, None)
        admission = await coordinator.breaker_admit(ENGINE, owner="bench", trial_lease_s=30)
        claim = await coordinator.claim_rate_slot(ENGINE, lease_s=30)
        assert claim.token is not None, "no spacing: every claim is granted"
        await coordinator.release_rate_slot(ENGINE, claim.token, 0.0)
        await coordinator.breaker_success(ENGINE, trial=admission.trial)


async def _ms_per_request(backends: Backends) -> float:
    await _requests(backends.coordinator, WARM_UP)
    started = time.perf_counter()
    await _requests(backends.coordinator, REQUESTS)
    return (time.perf_counter() - started) * 1000 / REQUESTS


def _measure(settings: dict[str, str]) -> float:
    return asyncio.run(with_backends(settings, _ms_per_request))


def run(shared_dir: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-coordination-") as folder:
        work = Path(folder)
        db = {"LYRA_DB_PATH": str(work / "lyra.sqlite3")}
        sqlite = _measure(db)
        with running_redis(work / "redis") as server:
            redis = _measure({**db, "LYRA_COORDINATION_URL": server.url})
    return {
        "coordination_ms_per_request_sqlite": round(sqlite, 3),
        "coordination_ms_per_request_redis": round(redis, 3),
        "coordination_redis_vs_sqlite": round(redis / sqlite, 3),
    }


if __name__ == "__main__":
    print(run(Path(__file__).resolve().parent.parent.parent / "shared"))
