"""Item pipelines: normalise -> canonical merge -> drop duplicates -> store page by page.

Settings: ITEM_PIPELINES wires them (see settings.py). Drops are counted in Scrapy stats under
`lyra/dropped/<reason>`; the merge's figures under `lyra/papers/<attribution>`.

The canonical merge sees every result before duplicates are dropped: the Semantic Scholar record
of a paper whose URL a SERP result already showed is not stored as a row of its own, but it is
what makes that paper `both` and gives it its metadata.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from lyra_crawl.engines.urls import is_web_url, normalize_url
from lyra_crawl.items import PaperItem, SerpItem
from lyra_crawl.papers.canonical import CanonicalPaper, CanonicalPaperIndex, PaperRecord
from lyra_crawl.papers.fusion import reciprocal_rank_fusion
from lyra_crawl.papers.identifiers import (
    identifiers_from,
    normalize_arxiv_id,
    normalize_doi,
    normalize_pmid,
)
from lyra_crawl.storage import StoredPaper


class _Pipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> _Pipeline:
        return cls(crawler)

    def drop(self, item: SerpItem, reason: str, message: str) -> DropItem:
        self.stats.inc_value(f"lyra/dropped/{reason}")
        return DropItem(f"{message}: {item.url}", log_level="DEBUG")


class NormalizePipeline(_Pipeline):
    """Fill normalized_url and the DOI / arXiv id / PMID; drop results that are not web URLs."""

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, SerpItem):
            return item
        if not is_web_url(item.url):
            raise self.drop(item, "not_http", "not an http(s) URL")
        item.normalized_url = item.normalized_url or normalize_url(item.url)
        found = identifiers_from(item.url, item.snippet)
        item.doi = normalize_doi(item.doi) or found.doi
        item.arxiv_id = normalize_arxiv_id(item.arxiv_id) or found.arxiv_id
        item.pmid = normalize_pmid(item.pmid) or found.pmid
        return item


class CanonicalPipeline(_Pipeline):
    """Merge the crawl's results into canonical papers (lyra_crawl.papers.canonical).

    At close: papers (records from an API, or web results carrying an identifier) are stored and
    the items linked to them; every item gets a fused rank across sources (reciprocal rank
    fusion of each source's order); the query row gets its attribution counts.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.index = CanonicalPaperIndex()
        self.sources: list[str] = []
        self.urls: list[str] = []
        # Position of each result's record in the index; None for a web result without an
        # identifier: with no year or authors it can never merge, so it is its own paper-less
        # group and costs the index nothing.
        self.positions: list[int | None] = []

    def process_item(self, item: Any) -> Any:
        if isinstance(item, SerpItem) and not self.crawler.spider.cache_hit:
            self._add(item.source, item.normalized_url, paper_record(item))
        return item

    def _add(self, source: str, url: str, record: PaperRecord) -> None:
        mergeable = record.kind == "api" or record.doi or record.arxiv_id or record.pmid
        self.positions.append(len(self.index) if mergeable else None)
        if mergeable:
            self.index.add(record)
        self.sources.append(source)
        self.urls.append(url)

    def close_spider(self) -> None:
        spider = self.crawler.spider
        if spider.storage_failure is not None:
            return  # the crawl stopped because nothing more can be written
        spider.pages.flush_all()  # every item stored before it is linked
        if spider.cache_hit:
            spider.storage.copy_paper_links(spider.cached_from, spider.query_id)
            return
        # A resumed crawl's items stored before the interruption join the merge, ahead of
        # this run's in each source's order.
        this_run = len(self.urls)
        for row in spider.resumed_items:
            scholarly = spider.config.engine(row["source"]).scholarly
            self._add(row["source"], row["normalized_url"], stored_record(row, scholarly))
        if spider.query_id is None or not self.urls:
            return
        keys: list[Hashable] = [
            ("url", url) if position is None else self.index.key_of(position)
            for url, position in zip(self.urls, self.positions, strict=True)
        ]
        rankings: dict[str, list[Hashable]] = {}
        for i in [*range(this_run, len(self.urls)), *range(this_run)]:
            rankings.setdefault(self.sources[i], []).append(keys[i])
        fused = reciprocal_rank_fusion(rankings)
        fused_by_url = {url: fused[key] for url, key in zip(self.urls, keys, strict=True)}
        urls_by_key: dict[Hashable, list[str]] = {}
        for url, key in zip(self.urls, keys, strict=True):
            urls_by_key.setdefault(key, []).append(url)
        papers = [(stored_paper(paper), urls_by_key[paper.key]) for paper in self.index.papers()]
        attribution = {kind: 0 for kind in ("both", "api_only", "serp_only")}
        for paper, _ in papers:
            attribution[paper.attribution] += 1
            self.stats.inc_value(f"lyra/papers/{paper.attribution}")
        spider.storage.save_papers(spider.query_id, papers, fused_by_url, attribution)


class DedupePipeline(_Pipeline):
    """Drop results already seen for this query; rank the rest by first appearance."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.seen: dict[int, set[str]] = {}
        self.next_rank: dict[tuple[int, str], int] = {}

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, SerpItem):
            return item
        spider = self.crawler.spider
        # A resumed crawl goes on from what its stored pages hold (empty otherwise).
        seen = self.seen.setdefault(item.query_id, set(spider.stored_keys))
        if item.normalized_url in seen:
            raise self.drop(item, "duplicate_url", "duplicate within the query")
        doi_key = f"doi:{item.doi}" if item.doi else None
        if doi_key in seen:
            raise self.drop(item, "duplicate_doi", "same DOI as an earlier result of the query")
        seen.add(item.normalized_url)
        if doi_key:
            seen.add(doi_key)
        key = (item.query_id, item.source)
        item.rank = self.next_rank.get(key, spider.stored_ranks.get(item.source, 0)) + 1
        self.next_rank[key] = item.rank
        return item


class StorePipeline(_Pipeline):
    """Hand kept items to the spider's page ledger, which writes whole pages to storage."""

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StorePipeline:
        pipeline = cls(crawler)
        crawler.signals.connect(pipeline.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(pipeline.item_error, signal=signals.item_error)
        return pipeline

    def process_item(self, item: Any) -> Any:
        if isinstance(item, SerpItem):
            self.crawler.spider.pages.keep(
                item.source, item.page_number, ItemAdapter(item).asdict()
            )
        return item

    def item_dropped(self, item: Any, **_: Any) -> None:
        if isinstance(item, SerpItem):
            self.crawler.spider.pages.drop(item.source, item.page_number)

    def item_error(self, item: Any, **_: Any) -> None:
        if isinstance(item, SerpItem):
            self.stats.inc_value("lyra/dropped/pipeline_error")
            self.crawler.spider.pages.drop(item.source, item.page_number)


def paper_record(item: SerpItem) -> PaperRecord:
    """The merge's view of one result: API metadata when the item is a paper record."""
    paper = item if isinstance(item, PaperItem) else None
    return PaperRecord(
        source=item.source,
        title=item.title,
        kind="api" if paper else "serp",
        year=paper.year if paper else None,
        authors=paper.authors if paper else (),
        venue=paper.venue if paper else None,
        abstract=paper.abstract if paper else None,
        url=item.url,
        doi=item.doi,
        arxiv_id=item.arxiv_id,
        pmid=item.pmid,
        source_id=paper.source_id if paper else None,
    )


def stored_record(row: Mapping[str, Any], scholarly: bool) -> PaperRecord:
    """The merge's view of an item stored by an earlier run of a resumed crawl."""
    return PaperRecord(
        source=row["source"],
        title=row["title"],
        kind="api" if scholarly else "serp",
        url=row["url"],
        doi=row["doi"],
        arxiv_id=row["arxiv_id"],
        pmid=row["pmid"],
    )


def stored_paper(paper: CanonicalPaper) -> StoredPaper:
    return StoredPaper(
        title=paper.title,
        normalized_title=paper.normalized_title,
        attribution=paper.attribution,
        doi=paper.doi,
        arxiv_id=paper.arxiv_id,
        pmid=paper.pmid,
        year=paper.year,
        authors=paper.authors,
        venue=paper.venue,
        abstract=paper.abstract,
        external_ids={r.source: r.source_id for r in paper.records if r.source_id},
        sources=tuple(sorted(paper.sources)),
    )
