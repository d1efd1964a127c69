"""Why an engine refuses requests right now, if it does: its breaker, its daily quota, or its
allowed hours. Pure.

A batch takes no entry that names an engine refusing now: it crawls the others first. A
breaker's cool-down ends soon, at a known time (engines.yaml `breaker:`), so once nothing else is
left the crawl waits for it; a spent daily quota (until midnight UTC) or hours outside the
engine's windows end the crawl with those entries pending, crawled when the batch runs again.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from lyra_crawl.config import EnginePolicy
from lyra_crawl.politeness.breaker import Health, refusal_reason
from lyra_crawl.politeness.hours import allowed_at, describe

BREAKER, QUOTA, HOURS = "breaker", "quota", "hours"
# What an entry without engine waits for when every engine it may be given refuses requests.
ANY_ENGINE = "an engine"


@dataclass(frozen=True)
class EngineRefusal:
    """An engine that refuses requests now, by which rule (`kind`), and why in words."""

    engine: str
    kind: str
    reason: str

    @property
    def ends_soon(self) -> bool:
        """Whether a crawl with nothing else to do waits for it (a breaker's cool-down)."""
        return self.kind == BREAKER


def engine_refusal(
    engine: str,
    policy: EnginePolicy,
    health: Health,
    used_today: int,
    now: datetime,
    *,
    enforced: Collection[str] = (BREAKER, QUOTA, HOURS),
) -> EngineRefusal | None:
    """The rule by which `engine` refuses a request asking `now`, or None if it takes it; only
    the `enforced` rules are asked (a crawl's switches may turn some off)."""
    breaker = refusal_reason(health, now.timestamp()) if BREAKER in enforced else None
    if breaker is not None:
        return EngineRefusal(engine, BREAKER, f"its {breaker}")
    limit = policy.daily_limit
    if QUOTA in enforced and limit is not None and used_today >= limit:
        return EngineRefusal(
            engine, QUOTA, f"its daily quota of {limit} requests is spent until midnight UTC"
        )
    if HOURS in enforced and not allowed_at(policy.allowed_hours, now):
        return EngineRefusal(
            engine, HOURS, f"it takes requests only in {describe(policy.allowed_hours)}"
        )
    return None


def every_engine_refusal(
    engines: Sequence[str], refused: Mapping[str, EngineRefusal]
) -> EngineRefusal | None:
    """When every one of `engines` (those the frontier may give an entry without engine)
    refuses requests now: one refusal saying so, ending soon when one of theirs does; else
    None."""
    if not engines or any(name not in refused for name in engines):
        return None
    theirs = [refused[name] for name in engines]
    kind = BREAKER if any(refusal.ends_soon for refusal in theirs) else theirs[0].kind
    each = "; ".join(f"{refusal.engine}: {refusal.reason}" for refusal in theirs)
    return EngineRefusal(
        ANY_ENGINE, kind, f"every engine the frontier may give them refuses requests now ({each})"
    )
