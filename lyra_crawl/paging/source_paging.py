"""One source's paging within one query: what it has seen and whether its next page is worth
a request. Pure.

After each page the pagination middleware hands the page's results here: their novelty
against every URL the source showed before (and, with `novelty_scope=history`, stored by
earlier crawls of the same query), their relevance to the query, the page's harvest rate, and
the stop rules' decision (lyra_crawl.paging.stop_rules).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lyra_crawl.paging.relevance import RelevanceConfig, RelevanceScorer, harvest_rate
from lyra_crawl.paging.stop_rules import (
    PageContext,
    PaginationDecision,
    PaginationStrategy,
    calculate_novelty_rate,
)


@dataclass(frozen=True)
class PageFigures:
    novelty_rate: float
    harvest_rate: float
    relevance: list[float]


@dataclass
class SourcePaging:
    """Paging state of one source of one query."""

    scorer: RelevanceScorer
    relevance: RelevanceConfig
    first_page: int
    # The source's own cap: its engine's max_pages, or first_page when engines.yaml turns
    # paging off for it.
    page_cap: int
    pagination_enabled: bool = True
    seen_urls: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls,
        query: str,
        relevance: RelevanceConfig,
        *,
        first_page: int,
        page_cap: int,
        pagination_enabled: bool,
        seen_before: Iterable[str] = (),
    ) -> SourcePaging:
        return cls(
            scorer=RelevanceScorer(query, relevance),
            relevance=relevance,
            first_page=first_page,
            page_cap=page_cap,
            pagination_enabled=pagination_enabled,
            seen_urls=set(seen_before),
        )

    def measure(self, urls: Sequence[str], texts: Sequence[tuple[str, str]]) -> PageFigures:
        """Novelty, relevance per result and harvest of one page; remembers its URLs."""
        novelty = calculate_novelty_rate(urls, self.seen_urls)
        self.seen_urls.update(urls)
        scores = [round(score, 4) for score in self.scorer.score_page(texts)]
        harvest = harvest_rate(scores, self.relevance.threshold) if scores else 0.0
        return PageFigures(novelty_rate=novelty, harvest_rate=harvest, relevance=scores)

    def decide(
        self,
        strategy: PaginationStrategy,
        *,
        page_number: int,
        results: int,
        figures: PageFigures,
        blocked: bool,
        error: bool,
        layout_changed: bool = False,
    ) -> PaginationDecision:
        return strategy.should_fetch_next(
            PageContext(
                page_number=page_number,
                serp_page=self.first_page,
                results_on_page=results,
                novelty_rate=figures.novelty_rate,
                harvest_rate=figures.harvest_rate,
                blocked=blocked,
                layout_changed=layout_changed,
                error=error,
                engine_max_pages=self.page_cap,
                pagination_disabled=not self.pagination_enabled,
            )
        )
