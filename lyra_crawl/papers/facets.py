"""Which canonical papers to keep, by their facets: year range, source, attribution, evidence.
Pure.

One small typed record, `PaperFacets`, for every reader of a task's papers that narrows them
(`scrapy export-papers` now; `scrapy select`'s facet stage can take the same record). A facet
left empty keeps every paper; a named one keeps the papers that have one of its values. A paper
whose year is unknown is left out by any year bound: nothing says it is inside the range.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from lyra_crawl.papers.collector import ATTRIBUTIONS

EVIDENCE_KINDS = ("abstract", "fetch")


class Faceted(Protocol):
    """What the facets read of a paper (a stored paper has all four)."""

    @property
    def year(self) -> int | None: ...

    @property
    def sources(self) -> Collection[str]: ...

    @property
    def attribution(self) -> str: ...

    @property
    def evidence(self) -> str | None: ...


@dataclass(frozen=True, kw_only=True)
class PaperFacets:
    """The papers to keep: published from `year_from` to `year_to` (both included), found by
    one of `sources`, with one of `attributions` and one of `evidence`; empty = any."""

    year_from: int | None = None
    year_to: int | None = None
    sources: frozenset[str] = frozenset()
    attributions: frozenset[str] = frozenset()
    evidence: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        first, last = self.year_from, self.year_to
        if first is not None and last is not None and first > last:
            raise ValueError(
                f"year range {first}-{last} is empty: the first year must not come after the last"
            )
        _known("attribution", self.attributions, ATTRIBUTIONS)
        _known("evidence", self.evidence, EVIDENCE_KINDS)

    def admits(self, paper: Faceted) -> bool:
        year = paper.year
        if self.year_from is not None and (year is None or year < self.year_from):
            return False
        if self.year_to is not None and (year is None or year > self.year_to):
            return False
        if self.sources and self.sources.isdisjoint(paper.sources):
            return False
        if self.attributions and paper.attribution not in self.attributions:
            return False
        return not self.evidence or paper.evidence in self.evidence


def _known(facet: str, values: frozenset[str], known: Collection[str]) -> None:
    if unknown := sorted(values.difference(known)):
        raise ValueError(
            f"unknown {facet} {', '.join(map(repr, unknown))}: use one of {', '.join(known)}"
        )
