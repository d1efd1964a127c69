"""Duplicates within one query, and ranks by first appearance. Pure.

A result repeats an earlier one of the same query when it has the same normalized URL or the
same DOI; the first one seen is kept. Each source's kept results are ranked 1, 2, 3… in the
order they arrived, across pages (a resumed crawl goes on from what its stored pages hold).
"""

from __future__ import annotations

from collections.abc import Iterable


class QueryDedupe:
    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._last_rank: dict[str, int] = {}

    def remember(self, normalized_url: str, doi: str | None, source: str, rank: int) -> None:
        """A result stored before (a resumed crawl's earlier run)."""
        self._seen.add(normalized_url)
        if doi:
            self._seen.add(f"doi:{doi}")
        self._last_rank[source] = max(self._last_rank.get(source, 0), rank)

    def duplicate_of(self, normalized_url: str, doi: str | None) -> str | None:
        """Why the result repeats an earlier one ('duplicate_url', 'duplicate_doi'), or None."""
        if normalized_url in self._seen:
            return "duplicate_url"
        if doi and f"doi:{doi}" in self._seen:
            return "duplicate_doi"
        return None

    def keep(self, normalized_url: str, doi: str | None, source: str) -> int:
        """Record a result as kept; returns its rank in its source."""
        self._seen.add(normalized_url)
        if doi:
            self._seen.add(f"doi:{doi}")
        rank = self._last_rank.get(source, 0) + 1
        self._last_rank[source] = rank
        return rank

    def seen(self) -> Iterable[str]:
        return self._seen
