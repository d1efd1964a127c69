"""A search answered from the cache: the stored pages of an earlier query, as a new query's."""

from __future__ import annotations

from collections.abc import Iterator

from lyra_crawl.items import SerpItem
from lyra_crawl.storage import PageRecord, Storage


def cached_pages(
    storage: Storage, cached_query_id: int, query_id: int
) -> Iterator[tuple[PageRecord, list[SerpItem]]]:
    """Each stored page of `cached_query_id` with its items, re-labelled for `query_id`."""
    items = storage.items(cached_query_id)
    for page in storage.pages(cached_query_id):
        rows = [
            row
            for row in items
            if row["source"] == page["source"] and row["page_number"] == page["page_number"]
        ]
        record = PageRecord(
            query_id=query_id,
            source=page["source"],
            page_number=page["page_number"],
            outcome=page["outcome"],
            results=page["results"],
            url=page["url"],
            novelty_rate=page["novelty_rate"],
            harvest_rate=page["harvest_rate"],
        )
        yield (
            record,
            [
                SerpItem(
                    query_id=query_id,
                    source=row["source"],
                    engine=row["engine"],
                    page_number=row["page_number"],
                    position=position,
                    url=row["url"],
                    title=row["title"],
                    snippet=row["snippet"] or "",
                    date=row["date"],
                    doi=row["doi"],
                    arxiv_id=row["arxiv_id"],
                    pmid=row["pmid"],
                    relevance=row["relevance"],
                )
                for position, row in enumerate(rows, start=1)
            ],
        )
