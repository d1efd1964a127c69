"""Facets: what narrows papers and documents, one filter for every reader. Pure.

A facet is a field of what is narrowed (a paper's year, sources, attribution, evidence, venue;
a search result's site; any field of a corpus line) and the values it keeps: a year range, or
values matched equal, contained or as a domain. `FacetFilter` is the one filter: `scrapy
export-papers` builds its filters from its options (`chosen_facets`), `scrapy select` from the
words of a question (lyra_crawl.retrieval.facets, the vocabulary in engines.yaml), and both
read a paper's facets as `paper_facets` gives them. A facet left out keeps everything; a named
one keeps what has one of its values. A paper whose year is unknown is left out by any year
bound: nothing says it is inside the range.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from lyra_crawl.papers.collector import ATTRIBUTIONS

# A facet's value: text, a year, or several (a paper found by several sources).
FacetValue = str | int | tuple[str, ...]
EVIDENCE_KINDS = ("abstract", "fetch")
_OPERATORS = {"equals": "=", "contains": "~", "domain": "@"}


@dataclass(frozen=True)
class FacetFilter:
    """One facet: the field it reads, how it matches (`year`: the range `low`..`high`, both
    included, either open; `equals`, `contains`, `domain`: one of `values`), and the words of a
    question that named it (`phrase`), if any."""

    name: str
    field: str
    match: str
    values: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    phrase: str = ""

    def describe(self) -> str:
        if self.match == "year":
            if self.low == self.high:
                return f"{self.name}={self.low}"
            return f"{self.name}={self.low or ''}..{self.high or ''}"
        return f"{self.name}{_OPERATORS[self.match]}{'|'.join(self.values)}"

    def accepts(self, value: FacetValue | None) -> bool:
        if value is None:
            return False
        if self.match == "year":
            year = _as_year(value)
            return year is not None and (self.low or year) <= year <= (self.high or year)
        have = [v.casefold() for v in (value if isinstance(value, tuple) else (str(value),))]
        wanted = [v.casefold() for v in self.values]
        if self.match == "contains":
            return any(w in h for w in wanted for h in have)
        if self.match == "domain":
            return any(h == w or h.endswith("." + w) for w in wanted for h in have)
        return any(w == h for w in wanted for h in have)


def _as_year(value: FacetValue) -> int | None:
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\d{4}", value.strip()):
        return int(value)
    return None


def keeps(filters: Iterable[FacetFilter], facets: Mapping[str, FacetValue]) -> bool:
    """Whether every filter accepts its field's value among `facets`."""
    return all(f.accepts(facets.get(f.field)) for f in filters)


class Faceted(Protocol):
    """What the facets read of a paper (a stored paper has all of it)."""

    @property
    def year(self) -> int | None: ...

    @property
    def sources(self) -> Collection[str]: ...

    @property
    def attribution(self) -> str: ...

    @property
    def evidence(self) -> str | None: ...

    @property
    def venue(self) -> str | None: ...


def paper_facets(paper: Faceted) -> dict[str, FacetValue]:
    """A paper's facets: `source` (every source that found it), `attribution`, `evidence`
    (empty when undecided), and `year` and `venue` when known."""
    facets: dict[str, FacetValue] = {
        "source": tuple(paper.sources),
        "attribution": paper.attribution,
        "evidence": paper.evidence or "",
    }
    if paper.year is not None:
        facets["year"] = paper.year
    if paper.venue:
        facets["venue"] = paper.venue
    return facets


def chosen_facets(
    *,
    year_from: int | None = None,
    year_to: int | None = None,
    sources: Collection[str] = (),
    attributions: Collection[str] = (),
    evidence: Collection[str] = (),
) -> tuple[FacetFilter, ...]:
    """The filters of papers published from `year_from` to `year_to` (both included), found by
    one of `sources`, with one of `attributions` and one of `evidence`; empty = any. ValueError
    for an empty year range or an attribution or evidence lyra does not know."""
    if year_from is not None and year_to is not None and year_from > year_to:
        raise ValueError(
            f"year range {year_from}-{year_to} is empty: the first year must not come after the"
            " last"
        )
    _known("attribution", attributions, ATTRIBUTIONS)
    _known("evidence", evidence, EVIDENCE_KINDS)
    filters = []
    if year_from is not None or year_to is not None:
        filters.append(FacetFilter("year", "year", "year", low=year_from, high=year_to))
    for name, values in (
        ("source", sources),
        ("attribution", attributions),
        ("evidence", evidence),
    ):
        if values:
            filters.append(FacetFilter(name, name, "equals", tuple(sorted(values))))
    return tuple(filters)


def _known(facet: str, values: Collection[str], known: Collection[str]) -> None:
    if unknown := sorted(set(values).difference(known)):
        raise ValueError(
            f"unknown {facet} {', '.join(map(repr, unknown))}: use one of {', '.join(known)}"
        )
