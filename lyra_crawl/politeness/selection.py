"""Engine choice when no `-a engine=` is given: last-mile, or the earliest free engine. Pure.

A task whose harvest rate is at or above the last-mile threshold (engines.yaml `lastmile:`, 0.9
inclusive) tries the last-mile engines in their configured order — unless the task's queries
that went last-mile already reach `lastmile.max_share` of its queries — skipping any that is not
available now (breaker open, daily quota spent, outside its `allowed_hours`).

Otherwise, or when no last-mile engine can take it, the query goes to a normal engine (weight >
0, available, inside its allowed hours): the one expected to be free soonest, given the requests
the crawl's running queries still have queued for each engine and its qps; among engines free
equally soon the choice is weighted random. With nothing queued (one query, or a light batch)
that is the weighted choice among all available engines; under a backlog it keeps every engine
busy and their queues even. Weight 0 means: only by name or last-mile. The decision's `reason`
names the rule that decided.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from lyra_crawl.config import LyraConfig
from lyra_crawl.politeness.hours import allowed_at, describe

# Free times closer than this are the same time (float noise, not a real difference).
_SAME_TIME_S = 1e-6


@dataclass(frozen=True)
class SelectionDecision:
    """How the engine was chosen; stored as JSON on the queries row."""

    engine: str | None
    should_use_lastmile: bool
    reason: str
    harvest_rate: float | None
    threshold: float
    # Engines left out of the choice because they cannot take this query, each with why.
    unfit: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TaskShare:
    """A task's queries so far, and how many of them went to a last-mile engine."""

    lastmile: int
    total: int


def choose_weighted(
    config: LyraConfig, candidates: Iterable[str], rng: random.Random | None = None
) -> str | None:
    """A weighted random choice among `candidates` with weight > 0, or None."""
    pool = [(name, config.policies[name].weight) for name in candidates]
    pool = [(name, weight) for name, weight in pool if weight > 0]
    if not pool:
        return None
    names, weights = zip(*pool, strict=False)
    return (rng or random).choices(names, weights=weights, k=1)[0]


def choose_engine(
    config: LyraConfig,
    *,
    usable: Collection[str],
    available: Collection[str],
    harvest_rate: float | None,
    now: datetime | None = None,
    queued: Mapping[str, float] | None = None,
    task_share: TaskShare | None = None,
    unfit: Mapping[str, str] | None = None,
    rng: random.Random | None = None,
) -> SelectionDecision:
    """Pick the engine for one query among `usable` engines, preferring `available` ones.

    `queued`: requests the crawl's running queries are expected to send to each engine.
    `task_share`: the task's queries so far, for `lastmile.max_share`.
    `unfit`: engines that cannot take this query (its length, region, …), each with why: left
    out, and named in the decision.
    """
    decision = _choose(
        config,
        [name for name in usable if name not in (unfit or {})],
        available,
        harvest_rate,
        now or datetime.now(UTC),
        queued or {},
        task_share,
        rng,
    )
    if not unfit:
        return decision
    left_out = ", ".join(sorted(unfit))
    return replace(
        decision, reason=f"{decision.reason} (cannot take this query: {left_out})", unfit=unfit
    )


def _choose(
    config: LyraConfig,
    usable: Collection[str],
    available: Collection[str],
    harvest_rate: float | None,
    now: datetime,
    queued: Mapping[str, float],
    task_share: TaskShare | None,
    rng: random.Random | None,
) -> SelectionDecision:
    """choose_engine's rules, among the engines that can take the query."""
    threshold = config.lastmile.threshold
    lastmile = harvest_rate is not None and harvest_rate >= threshold
    if lastmile:
        over_share = _over_share(config, task_share)
        if over_share:
            why_not = over_share
        else:
            engine, why_not = _lastmile_engine(config, usable, available, now)
            if engine is not None:
                reason = f"harvest rate {harvest_rate:g} >= {threshold:g}: last-mile"
                return SelectionDecision(engine, True, reason, harvest_rate, threshold)
    normal = normal_engines(config, usable)
    closed = [name for name in normal if name not in available or not _in_hours(config, name, now)]
    engine, how = earliest_free(
        config, [name for name in normal if name not in closed], queued, rng
    )
    if lastmile:
        reason = f"harvest rate {harvest_rate:g} >= {threshold:g} but {why_not}: {how}"
    elif harvest_rate is None:
        reason = f"no harvest rate for this task: {how}"
    else:
        reason = f"harvest rate {harvest_rate:g} < {threshold:g}: {how}"
    hours = [name for name in closed if name in available]
    if hours:
        reason += f" (outside allowed hours: {', '.join(hours)})"
    return SelectionDecision(engine, lastmile, reason, harvest_rate, threshold)


def normal_engines(config: LyraConfig, usable: Collection[str]) -> list[str]:
    """The engines the frontier gives a query without engine outside last-mile: weight > 0."""
    return [
        name
        for name in sorted(usable)
        if not config.policies[name].lastmile and config.policies[name].weight > 0
    ]


def earliest_free(
    config: LyraConfig,
    candidates: list[str],
    queued: Mapping[str, float],
    rng: random.Random | None = None,
) -> tuple[str | None, str]:
    """The engine expected to be free soonest (weighted among equals), and how it was picked."""
    if not candidates:
        return None, "no engine available"
    free_in = {name: queued.get(name, 0.0) / config.policies[name].qps for name in candidates}
    soonest = min(free_in.values())
    equal = [name for name in candidates if free_in[name] <= soonest + _SAME_TIME_S]
    engine = choose_weighted(config, equal, rng)
    if len(equal) == len(candidates):
        return engine, "weighted"
    return engine, f"earliest free ({', '.join(equal)} in {soonest:.1f} s): weighted"


def _over_share(config: LyraConfig, share: TaskShare | None) -> str:
    """Why the task may not send one more query last-mile ('' when it may): its share so far
    has reached the cap."""
    cap = config.lastmile.max_share
    if share is None or share.total == 0 or share.lastmile < cap * share.total:
        return ""
    return (
        f"the task already sent {share.lastmile} of {share.total} queries last-mile "
        f"(lastmile.max_share {cap:g})"
    )


def _lastmile_engine(
    config: LyraConfig, usable: Collection[str], available: Collection[str], now: datetime
) -> tuple[str | None, str]:
    """The first last-mile engine in order that can take a query now, or why none can."""
    unavailable = []
    for name in config.lastmile.order:
        if name not in usable:
            continue
        if name not in available:
            unavailable.append(name)
        elif not _in_hours(config, name, now):
            unavailable.append(f"{name} outside {describe(config.policies[name].allowed_hours)}")
        else:
            return name, ""
    listed = ", ".join(unavailable) or "none usable"
    return None, f"no last-mile engine is available (unavailable: {listed})"


def _in_hours(config: LyraConfig, name: str, now: datetime) -> bool:
    return allowed_at(config.policies[name].allowed_hours, now)
