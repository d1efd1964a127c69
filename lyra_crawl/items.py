"""Items: one result on one page of one query, as it passes the pipelines.

The result's own fields come from lyra_crawl.results (declared once); this adds where it was
found and what the pipelines fill in. A plain dataclass, so itemadapter, feed exports and the
backends read it like any Scrapy item.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from lyra_crawl.results import ResultKind, SerpResult


@dataclass(kw_only=True)
class ResultItem(SerpResult):
    """A result placed: its query, source, page and position; the pipelines fill the rest."""

    query_id: int
    # The engine or scholarly API that showed it (a query's SERP engine, or e.g. "openalex").
    source: str
    kind: ResultKind = "serp"
    page_number: int
    position: int
    normalized_url: str | None = None
    rank: int | None = None
    relevance: float | None = None

    @classmethod
    def place(
        cls,
        result: SerpResult,
        *,
        query_id: int,
        source: str,
        kind: ResultKind,
        page_number: int,
        position: int,
    ) -> ResultItem:
        """`result` as found at `position` on page `page_number` of `source` for a query."""
        return cls(
            **{name: getattr(result, name) for name in SERP_RESULT_FIELDS},
            query_id=query_id,
            source=source,
            kind=kind,
            page_number=page_number,
            position=position,
        )


SERP_RESULT_FIELDS = tuple(field.name for field in fields(SerpResult))
