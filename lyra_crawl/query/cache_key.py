"""The search-level cache key, shared by the spider and `scrapy batch`. Pure.

A key names what a crawl asked for: `normalized_query|engines|time_range|serp_max_pages={n}`,
engines sorted and joined by "," and no time range written as an empty field, so two crawls
asking the same thing share one key whatever order their engines were given in.
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
