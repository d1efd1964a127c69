"""One query's results gathered for the canonical merge, and what its close stores. Pure.

Every result of the query enters, in the order the sources showed them (a resumed crawl's
stored items first); results at one normalized URL are one paper. At the query's close
`merged()` gives the canonical papers with the normalized URLs of the results behind each,
every result's fused rank across sources (reciprocal rank fusion of each source's order) and
the query's attribution counts.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import CanonicalPaper, CanonicalPaperIndex, PaperRecord
from lyra_crawl.papers.fusion import reciprocal_rank_fusion
from lyra_crawl.results import result_fields

ATTRIBUTIONS = ("both", "api_only", "serp_only")


@dataclass(frozen=True)
class MergedPapers:
    papers: list[tuple[CanonicalPaper, list[str]]]
    fused_ranks: dict[str, int]
    attribution: dict[str, int]


def paper_record(item: ResultItem) -> PaperRecord:
    """The merge's view of one result, as an item or as a stored row."""
    return PaperRecord(
        source=item.source, kind=item.kind, url=item.url, title=item.title, **result_fields(item)
    )


class QueryPapers:
    def __init__(self) -> None:
        self._index = CanonicalPaperIndex()
        self._sources: list[str] = []
        self._urls: list[str] = []
        # Position of each result's record in the index; None for a web result without an
        # identifier: with no year or authors it can never merge, so it is its own paper-less
        # group and costs the index nothing, unless a paper's record has its URL.
        self._positions: list[int | None] = []
        self._earlier: list[int] = []
        # A result at the URL of a paper's record is that paper, whatever its title says: the
        # position of the first record indexed at each URL, and the results at URLs none has
        # yet (their place among the results, and their record).
        self._indexed_at: dict[str, int] = {}
        self._waiting_at: dict[str, list[tuple[int, PaperRecord]]] = {}

    def __len__(self) -> int:
        return len(self._urls)

    def add(self, normalized_url: str, record: PaperRecord, *, earlier: bool = False) -> None:
        """One result; `earlier` ones (stored by an interrupted run) rank first in its source."""
        mergeable = record.kind == "api" or record.doi or record.arxiv_id or record.pmid
        if earlier:
            self._earlier.append(len(self._urls))
        first = self._indexed_at.get(normalized_url)
        if first is not None:
            self._positions.append(len(self._index))
            self._index.add_same(record, first)
        elif mergeable:
            first = self._indexed_at[normalized_url] = len(self._index)
            self._positions.append(first)
            self._index.add(record)
            for result, waiting in self._waiting_at.pop(normalized_url, ()):
                self._positions[result] = len(self._index)
                self._index.add_same(waiting, first)
        else:
            self._positions.append(None)
            self._waiting_at.setdefault(normalized_url, []).append((len(self._urls), record))
        self._sources.append(record.source)
        self._urls.append(normalized_url)

    def merged(self) -> MergedPapers:
        keys: list[Hashable] = [
            ("url", url) if position is None else self._index.key_of(position)
            for url, position in zip(self._urls, self._positions, strict=True)
        ]
        earlier = set(self._earlier)
        order = [*self._earlier, *(i for i in range(len(keys)) if i not in earlier)]
        rankings: dict[str, list[Hashable]] = {}
        for i in order:
            rankings.setdefault(self._sources[i], []).append(keys[i])
        fused = reciprocal_rank_fusion(rankings)
        # Results at one URL are one item (the dedupe keeps the first): each URL once.
        urls_by_key: dict[Hashable, dict[str, None]] = {}
        for url, key in zip(self._urls, keys, strict=True):
            urls_by_key.setdefault(key, {})[url] = None
        papers = [(paper, list(urls_by_key[paper.key])) for paper in self._index.papers()]
        attribution = dict.fromkeys(ATTRIBUTIONS, 0)
        for paper, _ in papers:
            attribution[paper.attribution] += 1
        return MergedPapers(
            papers=papers,
            fused_ranks={url: fused[key] for url, key in zip(self._urls, keys, strict=True)},
            attribution=attribution,
        )
