"""The Coordinator's breaker steps, the same on every backend.

A backend gives one atomic primitive, `_change_health(engine, change)`: apply
`change(health, now)` to the engine's breaker as one step, `now` read from the backend's clock.
The decisions stay in lyra_crawl.politeness.breaker, the one state machine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TypeVar

from lyra_crawl.config import BreakerPolicy
from lyra_crawl.politeness.breaker import Admission, Health, admit, record_failure, record_success
from lyra_crawl.records import BreakerChange

T = TypeVar("T")


class BreakerSteps(ABC):
    @abstractmethod
    async def _change_health(
        self, engine: str, change: Callable[[Health, float], tuple[T, Health]]
    ) -> T:
        """Apply `change` to `engine`'s breaker atomically; returns its first value."""

    async def breaker_admit(self, engine: str, *, owner: str, trial_lease_s: float) -> Admission:
        return await self._change_health(
            engine,
            lambda health, now: admit(health, now=now, owner=owner, trial_lease_s=trial_lease_s),
        )

    async def breaker_success(self, engine: str, *, trial: bool) -> None:
        await self._change_health(
            engine, lambda health, _now: (None, record_success(health, trial=trial))
        )

    async def breaker_failure(
        self,
        engine: str,
        policy: BreakerPolicy,
        *,
        kind: str,
        trial: bool,
        retry_after_s: float | None,
    ) -> BreakerChange:
        def change(before: Health, now: float) -> tuple[BreakerChange, Health]:
            after = record_failure(
                before, policy, kind=kind, now=now, trial=trial, retry_after_s=retry_after_s
            )
            return BreakerChange(before, after), after

        return await self._change_health(engine, change)
