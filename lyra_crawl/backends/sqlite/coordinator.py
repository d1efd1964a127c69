"""SqliteCoordinator: quotas, send slots and breakers shared through one SQLite file.

Each step is all-or-nothing under the write lock (BEGIN IMMEDIATE) on the database's worker
thread, so crawls in any number of processes sharing the file see each other's changes whole
and in order; the clock is read once the write lock is held, so waiting for the lock cannot
make a claim look earlier. A process waiting for a slot another process holds is woken by its
release (release_signals).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from lyra_crawl.backends import rows
from lyra_crawl.backends.breaker_steps import BreakerSteps
from lyra_crawl.backends.rows import utc_now
from lyra_crawl.backends.sqlite.database import SqliteBackend, SqliteDatabase
from lyra_crawl.backends.sqlite.release_signals import ReleaseSignals
from lyra_crawl.politeness.breaker import Health
from lyra_crawl.records import EngineState, RateClaim

T = TypeVar("T")


class SqliteCoordinator(SqliteBackend, BreakerSteps):
    def __init__(self, database: SqliteDatabase, signals: ReleaseSignals) -> None:
        super().__init__(database)
        self._signals = signals

    # -- daily quota -----------------------------------------------------------------------

    async def reserve_quota(self, engine: str, day: str, daily_limit: int | None) -> bool:
        limit = -1 if daily_limit is None else daily_limit
        # One conditional statement: the count can only grow while it is under the limit.
        return await self._db.write(
            lambda conn: (
                conn.execute(
                    "INSERT INTO engine_usage (engine, date, usage_count)"
                    " SELECT ?, ?, 1 WHERE ? != 0"
                    " ON CONFLICT (engine, date) DO UPDATE SET usage_count = usage_count + 1"
                    " WHERE ? < 0 OR usage_count < ?",
                    (engine, day, limit, limit, limit),
                ).rowcount
                == 1
            ),
            urgent=True,
        )

    async def quota_used(self, engine: str, day: str) -> int:
        row = await self._db.read(
            lambda conn: conn.execute(
                "SELECT usage_count FROM engine_usage WHERE engine = ? AND date = ?",
                (engine, day),
            ).fetchone(),
            urgent=True,
        )
        return int(row[0]) if row else 0

    async def quota_used_on(self, day: str) -> dict[str, int]:
        return await self._db.read(
            lambda conn: {
                row[0]: row[1]
                for row in conn.execute(
                    "SELECT engine, usage_count FROM engine_usage WHERE date = ?", (day,)
                )
            },
            urgent=True,
        )

    async def engine_states(self, engines: Sequence[str], day: str) -> dict[str, EngineState]:
        def read(conn: sqlite3.Connection) -> dict[str, EngineState]:
            marks = ", ".join("?" for _ in engines)
            healths = {
                row["engine"]: row
                for row in conn.execute(
                    f"SELECT * FROM engine_health WHERE engine IN ({marks})", tuple(engines)
                )
            }
            used = dict(
                conn.execute(
                    "SELECT engine, usage_count FROM engine_usage"
                    f" WHERE date = ? AND engine IN ({marks})",
                    (day, *engines),
                ).fetchall()
            )
            return {
                name: EngineState(rows.health(name, healths.get(name)), used.get(name, 0))
                for name in engines
            }

        return await self._db.read(read, urgent=True)

    # -- the per-engine send slot ----------------------------------------------------------
    # `engine_rate.next_allowed` is the end of the holder's lease while a request is in
    # flight, and release time + 1/qps once it is answered; `held` tells the two apart.

    async def claim_rate_slot(self, engine: str, lease_s: float) -> RateClaim:
        address = self._signals.expect(engine)

        def claim(conn: sqlite3.Connection) -> RateClaim:
            now = time.time()
            taken = conn.execute(
                "INSERT INTO engine_rate (engine, next_allowed, held) VALUES (?, ?, 1)"
                " ON CONFLICT (engine) DO UPDATE SET next_allowed = excluded.next_allowed,"
                " held = 1 WHERE next_allowed <= ?",
                (engine, now + lease_s, now),
            ).rowcount
            if taken == 1:
                return RateClaim(token=now + lease_s)
            next_allowed, held = conn.execute(
                "SELECT next_allowed, held FROM engine_rate WHERE engine = ?", (engine,)
            ).fetchone()
            if held and address is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO engine_rate_waiters (engine, address) VALUES (?, ?)",
                    (engine, address),
                )
            return RateClaim(None, max(float(next_allowed) - now, 0.0), bool(held))

        return await self._db.write(claim, urgent=True)

    async def slot_released(self, engine: str, timeout_s: float) -> bool:
        return await self._signals.released(engine, timeout_s)

    async def release_rate_slot(self, engine: str, token: float, interval_s: float) -> None:
        # Counted from the answer, not from when the worker thread gets to the write: the
        # caller's own next claim comes 1/qps after the answer and would find the slot not
        # yet free by as long as the write waited in the worker's queue.
        free_at = time.time() + interval_s

        def release(conn: sqlite3.Connection) -> None:
            # A lease that ran out may already be someone else's: leave theirs alone.
            released = conn.execute(
                "UPDATE engine_rate SET next_allowed = ?, held = 0"
                " WHERE engine = ? AND next_allowed = ?",
                (free_at, engine, token),
            ).rowcount
            if released:
                waiting = conn.execute(
                    "DELETE FROM engine_rate_waiters WHERE engine = ? RETURNING address", (engine,)
                )
                # Sent before the commit: a woken claim queues for the write lock behind it.
                self._signals.send(engine, [address for (address,) in waiting])

        await self._db.write(release, urgent=True)

    # -- circuit breaker -------------------------------------------------------------------

    async def breaker_health(self, engine: str) -> Health:
        return await self._db.read(lambda conn: _health(conn, engine), urgent=True)

    async def _change_health(
        self, engine: str, change: Callable[[Health, float], tuple[T, Health]]
    ) -> T:
        """Apply `change` to `engine`'s breaker atomically; returns its first value.

        Most answers change nothing (a closed breaker stays closed): a plain read settles
        those. A change is decided again under the write lock, from the state read there.
        """

        def decide(conn: sqlite3.Connection) -> T:
            before = _health(conn, engine)
            result, after = change(before, time.time())
            return result if after == before else self._db.in_transaction(write)

        def write(conn: sqlite3.Connection) -> T:
            before = _health(conn, engine)
            result, after = change(before, time.time())
            if after != before:
                conn.execute(
                    "INSERT OR REPLACE INTO engine_health (engine, state, open_until,"
                    " consecutive_failures, trips, last_reason, trial_owner, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        engine,
                        after.state.value,
                        after.open_until,
                        after.consecutive_failures,
                        after.trips,
                        after.last_reason,
                        after.trial_owner,
                        utc_now(),
                    ),
                )
            return result

        return await self._db.read(decide, urgent=True)


def _health(conn: sqlite3.Connection, engine: str) -> Health:
    return rows.health(
        engine, conn.execute("SELECT * FROM engine_health WHERE engine = ?", (engine,)).fetchone()
    )
