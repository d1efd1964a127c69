"""Gather every result of a query for the canonical merge (lyra_crawl.papers).

The merge itself runs when the query closes (lyra_crawl.session.closing): papers stored and
their items linked, fused ranks, attribution counts. A query answered from the cache re-uses
the cached query's papers instead.
"""

from __future__ import annotations

from typing import Any

from lyra_crawl.papers.collector import paper_record
from lyra_crawl.pipelines import ResultPipeline


class CanonicalPipeline(ResultPipeline):
    def process_item(self, item: Any) -> Any:
        query = self.query_of(item)
        if query is not None and not query.cache_hit:
            query.papers.add(item.normalized_url, paper_record(item))
        return item
