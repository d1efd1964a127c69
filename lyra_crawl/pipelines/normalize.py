"""Fill normalized_url and the DOI / arXiv id / PMID; drop results that are not web URLs."""

from __future__ import annotations

from typing import Any

from lyra_crawl.engines.urls import is_web_url, normalize_url
from lyra_crawl.papers.identifiers import (
    identifiers_from,
    normalize_arxiv_id,
    normalize_doi,
    normalize_pmid,
)
from lyra_crawl.pipelines import ResultPipeline


class NormalizePipeline(ResultPipeline):
    def process_item(self, item: Any) -> Any:
        if self.query_of(item) is None:
            return item
        if not is_web_url(item.url):
            raise self.drop(item, "not_http", "not an http(s) URL")
        item.normalized_url = item.normalized_url or normalize_url(item.url)
        found = identifiers_from(item.url, item.snippet)
        item.doi = normalize_doi(item.doi) or found.doi
        item.arxiv_id = normalize_arxiv_id(item.arxiv_id) or found.arxiv_id
        item.pmid = normalize_pmid(item.pmid) or found.pmid
        return item
