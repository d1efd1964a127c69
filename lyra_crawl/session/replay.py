"""A search answered from the cache: the stored pages of an earlier query, as a new query's."""

from __future__ import annotations

from dataclasses import fields, replace

from lyra_crawl.backends.protocols import QueryStore
from lyra_crawl.items import ResultItem
from lyra_crawl.records import PageRecord

ITEM_FIELDS = tuple(field.name for field in fields(ResultItem))
PAGE_FIELDS = tuple(field.name for field in fields(PageRecord))


async def replayed_pages(
    store: QueryStore, cached_query_id: int, query_id: int
) -> list[tuple[PageRecord, list[ResultItem]]]:
    """Each stored page of `cached_query_id` with its items, re-labelled for `query_id`.

    The items go through the pipelines again (they rank and store them as this query's);
    fields the pipelines fill are left for them to fill.
    """
    items = await store.items(cached_query_id)
    replayed = []
    for page in await store.pages(cached_query_id):
        rows = [
            row
            for row in items
            if row.source == page.source and row.page_number == page.page_number
        ]
        record = PageRecord(**{name: getattr(page, name) for name in PAGE_FIELDS})
        replayed.append(
            (
                replace(record, query_id=query_id),
                [
                    replace(
                        ResultItem(**{name: getattr(row, name) for name in ITEM_FIELDS}),
                        query_id=query_id,
                        position=position,
                        rank=None,
                    )
                    for position, row in enumerate(rows, start=1)
                ],
            )
        )
    return replayed
