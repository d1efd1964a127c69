"""Reciprocal rank fusion: one ranking per query out of each source's own ranking. Pure.

score(x) = sum over sources of 1 / (k + rank of x in that source); k = 60 as in Cormack,
Clarke & Buettcher (SIGIR 2009), which damps the weight of any single source's top ranks.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[Hashable]], k: int = RRF_K
) -> dict[Hashable, int]:
    """Fused rank (1 = best) of every key in any ranking; ties keep first-seen order."""
    scores: dict[Hashable, float] = {}
    for ranking in rankings.values():
        seen: set[Hashable] = set()
        for position, key in enumerate(ranking, start=1):
            if key in seen:
                continue  # a source listing one paper twice gets credit for its best rank only
            seen.add(key)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + position)
    ordered = sorted(scores, key=lambda key: -scores[key])
    return {key: rank for rank, key in enumerate(ordered, start=1)}
