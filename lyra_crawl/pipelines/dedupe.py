"""Drop results already seen for their query (same normalized URL or DOI); rank the rest by
first appearance in their source."""

from __future__ import annotations

from typing import Any

from lyra_crawl.pipelines import ResultPipeline


class DedupePipeline(ResultPipeline):
    def process_item(self, item: Any) -> Any:
        query = self.query_of(item)
        if query is None:
            return item
        duplicate = query.dedupe.duplicate_of(item.normalized_url, item.doi)
        if duplicate == "duplicate_url":
            raise self.drop(item, duplicate, "duplicate within the query")
        if duplicate == "duplicate_doi":
            raise self.drop(item, duplicate, "same DOI as an earlier result of the query")
        item.rank = query.dedupe.keep(item.normalized_url, item.doi, item.source)
        return item
