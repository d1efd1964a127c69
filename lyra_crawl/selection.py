"""Engine choice when no `-a engine=` is given. Pure."""

from __future__ import annotations

import random
from collections.abc import Iterable

from lyra_crawl.config import LyraConfig


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
