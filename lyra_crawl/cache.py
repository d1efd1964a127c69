"""The search-level cache key. Pure.

`normalized_query|engines|time_range|serp_max_pages={n}`: the same question asked of the same
engines over the same window and depth. Pagination type and page size are deliberately not part
of it: they are how an engine is asked, not what is asked.
"""

from __future__ import annotations

from collections.abc import Sequence


def cache_key(
    normalized_query: str, engines: Sequence[str], time_range: str | None, serp_max_pages: int
) -> str:
    return "|".join(
        (
            normalized_query,
            ",".join(sorted(engines)),
            time_range or "",
            f"serp_max_pages={serp_max_pages}",
        )
    )
