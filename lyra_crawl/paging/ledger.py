"""Gather each page's items as they leave the pipelines, and hand over complete pages. Pure.

Items pass the pipelines one by one, and some are dropped on the way (duplicates, unusable
URLs). The spider opens a page with the number of results it parsed; every item of that page is
then either kept or dropped, and once all are accounted for the page is flushed as a whole, so
storage writes it in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lyra_crawl.records import PageRecord

PageKey = tuple[str, int]
Flush = Callable[[PageRecord, list[Any]], None]


@dataclass
class _OpenPage:
    record: PageRecord
    expected: int
    kept: list[Any] = field(default_factory=list)
    dropped: int = 0

    @property
    def complete(self) -> bool:
        return len(self.kept) + self.dropped >= self.expected


class PageLedger:
    def __init__(self, flush: Flush) -> None:
        self._flush = flush
        self._open: dict[PageKey, _OpenPage] = {}

    def __len__(self) -> int:
        """Pages still waiting for items."""
        return len(self._open)

    def open_page(self, record: PageRecord, expected: int) -> None:
        """Announce a page and how many items will come for it (0 flushes at once)."""
        page = _OpenPage(record, expected)
        self._open[(record.source, record.page_number)] = page
        self._flush_if_complete((record.source, record.page_number), page)

    def annotate(self, source: str, page_number: int, **fields: Any) -> None:
        """Add page-level figures (novelty, harvest) before the page is flushed."""
        page = self._open.get((source, page_number))
        if page is not None:
            page.record = replace(page.record, **fields)

    def keep(self, source: str, page_number: int, item: Any) -> None:
        key = (source, page_number)
        page = self._open[key]
        page.kept.append(item)
        self._flush_if_complete(key, page)

    def drop(self, source: str, page_number: int) -> None:
        key = (source, page_number)
        page = self._open.get(key)
        if page is not None:
            page.dropped += 1
            self._flush_if_complete(key, page)

    def flush_all(self) -> None:
        """Flush pages still open (only when the crawl ends with items in flight)."""
        for key in list(self._open):
            page = self._open.pop(key)
            self._flush(page.record, page.kept)

    def _flush_if_complete(self, key: PageKey, page: _OpenPage) -> None:
        if page.complete:
            del self._open[key]
            self._flush(page.record, page.kept)
