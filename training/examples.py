"""Labelled examples for the matcher, found and described by the paper index itself.

The matcher only ever judges what the index puts before it: two groups of records whose titles
are linked, with the features ``CanonicalPaperIndex`` computes for them. So the examples come
from the index's own search, not from another blocking:

* a set labelled by paper (``LabelledSet.entities``) is added whole to one index in which the
  truth decides every judgement (teacher forcing): each judgement is an example (the groups'
  features, whether they are one paper), and the groups then grow as they would with a
  matcher that is right;
* a set of labelled pairs (``LabelledSet.pairs``) gives each pair to an index of its own that
  knows the author and venue words of the whole set: an example when the index links the two
  titles, none when it would never judge them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lyra_crawl.papers.canonical import CanonicalPaperIndex
from lyra_crawl.papers.matcher import Matcher
from lyra_crawl.papers.title_links import TitleLink, cited_words
from training.datasets import LabelledSet

__all__ = ["Examples", "examples"]

# Any weights: in the teacher's index the truth decides, and a pair's index only judges once.
_UNUSED = Matcher(0.0, (), 0.5)


@dataclass
class Examples:
    """Feature rows and their labels, with the set each came from."""

    rows: list[tuple[float, ...]] = field(default_factory=list)
    labels: list[bool] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)

    def extend(self, other: Examples) -> None:
        self.rows += other.rows
        self.labels += other.labels
        self.sets += other.sets


def examples(labelled: LabelledSet) -> Examples:
    """The judgements the index makes on a labelled set (at the set's year tolerance), with
    their truth."""
    if labelled.entities is not None:
        return _taught(labelled, labelled.entities)
    return _paired(labelled, labelled.year_tolerance)


class _Teacher(CanonicalPaperIndex):
    """An index in which the truth decides, keeping each judgement as an example."""

    def __init__(self, labelled: LabelledSet, entities: list[str]) -> None:
        super().__init__(matcher=_UNUSED, year_tolerance=labelled.year_tolerance)
        self.entities = entities
        self.name = labelled.name
        self.found = Examples()

    def _same_paper(self, a: int, b: int, link: TitleLink) -> bool:
        values = self._pair_values(a, b, link)
        if values is None:
            return False
        # A group's key is its first record; the truth keeps every group one paper.
        same = self.entities[a] == self.entities[b]
        self.found.rows.append(values)
        self.found.labels.append(same)
        self.found.sets.append(self.name)
        return same


class _PairJudge(CanonicalPaperIndex):
    """An index of two records that keeps the one judgement it makes."""

    def __init__(self, year_tolerance: int) -> None:
        super().__init__(matcher=_UNUSED, year_tolerance=year_tolerance)
        self.judged: tuple[float, ...] | None = None

    def _same_paper(self, a: int, b: int, link: TitleLink) -> bool:
        self.judged = self._pair_values(a, b, link)
        return False


def _taught(labelled: LabelledSet, entities: list[str]) -> Examples:
    index = _Teacher(labelled, entities)
    index.add_many(labelled.records)
    return index.found


def _paired(labelled: LabelledSet, year_tolerance: int) -> Examples:
    names: set[str] = set()
    venues: set[str] = set()
    for record in labelled.records:
        name_words, venue_words = cited_words(record)
        names |= name_words
        venues |= venue_words
    found = Examples()
    for a, b, same in labelled.pairs or ():
        index = _PairJudge(year_tolerance)
        index.know_words(names, venues)
        index.add_many((labelled.records[a], labelled.records[b]))
        if index.judged is not None:
            found.rows.append(index.judged)
            found.labels.append(same)
            found.sets.append(labelled.name)
    return found
