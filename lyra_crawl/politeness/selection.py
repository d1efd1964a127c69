"""Engine choice when no `-a engine=` is given: last-mile or weighted. Pure.

A task whose harvest rate is at or above the last-mile threshold (engines.yaml `lastmile:`,
0.9 inclusive) tries the last-mile engines in their configured order, skipping any that is not
available now (breaker open, daily quota spent); when none is, or the rate is below the
threshold or unknown, a weighted random choice among the available normal engines.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from lyra_crawl.config import LyraConfig


@dataclass(frozen=True)
class SelectionDecision:
    """How the engine was chosen; stored as JSON on the queries row."""

    engine: str | None
    should_use_lastmile: bool
    reason: str
    harvest_rate: float | None
    threshold: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    rng: random.Random | None = None,
) -> SelectionDecision:
    """Pick the engine for one query among `usable` engines, preferring `available` ones."""
    threshold = config.lastmile.threshold
    lastmile = harvest_rate is not None and harvest_rate >= threshold
    skipped: list[str] = []
    if lastmile:
        for name in config.lastmile.order:
            if name not in usable:
                continue
            if name in available:
                return SelectionDecision(
                    name,
                    True,
                    f"harvest rate {harvest_rate:g} >= {threshold:g}: last-mile",
                    harvest_rate,
                    threshold,
                )
            skipped.append(name)
    normal = [n for n in usable if not config.policies[n].lastmile and n in available]
    engine = choose_weighted(config, sorted(normal), rng)
    if lastmile:
        reason = (
            f"harvest rate {harvest_rate:g} >= {threshold:g} but no last-mile engine is "
            f"available (unavailable: {', '.join(skipped) or 'none usable'}): weighted"
        )
    elif harvest_rate is None:
        reason = "no harvest rate for this task: weighted"
    else:
        reason = f"harvest rate {harvest_rate:g} < {threshold:g}: weighted"
    return SelectionDecision(engine, lastmile, reason, harvest_rate, threshold)
