"""CanonicalPaperIndex: merge records of the same paper from SERP engines and scholarly APIs.

Pure logic, no Scrapy imports. Two records are the same paper when

* they share a DOI, an arXiv id or a PMID — transitively, so a Semantic Scholar record carrying
  both a journal DOI and an arXiv id joins the journal version and the preprint
  (``identifiers.identifier_keys``); or
* their normalised titles (``title_normalization``) are linked (``title_links``: similar, or one
  the other with a citation or a subtitle after a long shared start, or one ending the other)
  and their other evidence agrees (``corroboration``: years, author surnames, the citation
  around a title, identifiers of one kind that must not disagree).

Titles that name no one paper ("Editorial", "Erratum: X", "X, part II") never merge by their
titles. Evidence (years, surnames, identifiers) is kept per canonical paper, a union-find group,
so a SERP record without authors can join through the year of an API record already in the
group. Title scoring is blocked (``blocking``): each distinct title is scored, in one rapidfuzz
call, only against the earlier titles of its blocks. A paper's fields are chosen from its
records by ``assembly``.

The index's jobs live in their own modules; this one keeps the groups: records in, union-find,
the distinct titles with their links, and the sides of a store's index (``add_groups``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain
from typing import Literal

from lyra_crawl.papers.assembly import Attribution, CanonicalPaper, canonical_paper
from lyra_crawl.papers.blocking import BLOCK_LIMIT, block_keys
from lyra_crawl.papers.identifiers import identifier_keys
from lyra_crawl.papers.matcher import Matcher, trained_matcher
from lyra_crawl.papers.pair_features import GroupFacts, pair_features, record_facts
from lyra_crawl.papers.records import PaperRecord, RecordKind
from lyra_crawl.papers.title_links import (
    CitedWords,
    TitleLink,
    same_title_features,
    similar_titles,
)
from lyra_crawl.papers.title_normalization import normalize_title, title_qualifier

# The index's inputs and outputs, and the blocks' limit a store shares, are read from here too.
__all__ = [
    "BLOCK_LIMIT",
    "Attribution",
    "CanonicalPaper",
    "CanonicalPaperIndex",
    "PaperRecord",
    "RecordKind",
    "Side",
    "no_cyclic_gc",
]

# Of groups added with add_groups: a store's index holds its stored papers and a query's new ones.
Side = Literal["stored", "new"]
_SIDE_BITS: dict[Side, int] = {"stored": 1, "new": 2}
_BOTH_SIDES = 3


@dataclass(slots=True)
class _Prepared:
    normalized_title: str
    id_keys: tuple[tuple[str, str], ...]
    facts: GroupFacts


@dataclass(slots=True)
class _Title:
    """One distinct normalised title and the earlier titles it may merge with."""

    text: str
    words: tuple[str, ...]
    groups: list[int] = field(default_factory=list)  # one record per paper seen with this title
    links: list[TitleLink] = field(default_factory=list)  # itself included
    sides: int = 0  # the side bits of the groups seen with it (an index with sides)


class CanonicalPaperIndex:
    """Incremental index that groups records into canonical papers.

    Keys are record indices (the order of ``add``/``add_many``): a paper's key is the index of
    its first record, so a key can change to a smaller one when a later record joins two papers.
    """

    def __init__(self, *, matcher: Matcher | None = None, year_tolerance: int = 1) -> None:
        self.matcher = matcher or trained_matcher()
        self.year_tolerance = year_tolerance
        self._records: list[PaperRecord] = []
        self._parent: list[int] = []
        self._facts: dict[int, GroupFacts] = {}
        self._by_identifier: dict[tuple[str, str], int] = {}
        self._title_ids: dict[str, int] = {}
        self._titles: list[_Title] = []
        # Each title's qualifier (notice kind and part numbers; must be equal to merge) as a
        # number, by title id: compared for every title of a title's blocks.
        self._qualifiers: list[int] = []
        self._qualifier_ids: dict[tuple[str, frozenset[str]], int] = {}
        self._blocks: dict[tuple[str, ...], list[int]] = {}
        # Words seen in author and venue fields: what a citation around a title is made of.
        self._cited = CitedWords()
        # The side bits of groups added with a side, by their key; empty in a plain index.
        self._sides: dict[int, int] = {}
        # The sides of every title seen: a title's blocks are searched only once the other
        # side has titles (a store's index adds all its stored groups first).
        self._title_sides = 0
        # Each distinct raw title added, normalised (once: papers() reads them again).
        self._normalized: dict[str, str] = {}

    def add(self, record: PaperRecord) -> int:
        """Add one record and return the key of the canonical paper it belongs to."""
        return self._add(record, self._prepare(record, normalize_title(record.title)))

    def add_same(self, record: PaperRecord, as_record: int) -> int:
        """Add a record of the very document the record added at ``as_record`` is (the same
        URL), joined with its paper unless an identifier of one kind disagrees; returns the key
        of the paper it belongs to."""
        self.add(record)
        index = len(self._records) - 1
        if self._facts[self._find(index)].ids_agree(self._facts[self._find(as_record)]):
            self._union(index, as_record)
        return self._find(index)

    def add_groups(
        self, groups: Iterable[Iterable[PaperRecord]], *, side: Side | None = None
    ) -> list[int]:
        """Add groups of records, each already known to be one paper whatever the rules say of
        its records; the rules merge the groups with other papers. Returns each one's key.

        With a side (a store's index: its stored papers, then a query's new ones), the title
        rules never join two groups of one side: groups join only through a group of the other.
        An index with sides takes every group with one (`add` and `add_many` give none).
        """
        bits = _SIDE_BITS[side] if side else 0
        keys = []
        with no_cyclic_gc():
            for records in groups:
                first, *others = self._add_records(records, bits)
                for other in others:
                    self._union(first, other)
                keys.append(first)
        return [self._find(key) for key in keys]

    def know_words(self, names: Iterable[str], venues: Iterable[str]) -> None:
        """Words of the author and venue fields of records outside the index (``cited_words``
        of a store's papers): citations around titles are read with them as with its own."""
        self._cited.names.update(names)
        self._cited.venues.update(venues)

    def add_many(self, records: Iterable[PaperRecord]) -> list[int]:
        """Add records in order (same result as repeated ``add``); return each one's final key.

        Each distinct raw title is normalised once, and each distinct normalised title is
        scored once, against its whole block in a single rapidfuzz call.
        """
        with no_cyclic_gc():
            return self._add_records(records, 0)

    def _add_records(self, records: Iterable[PaperRecord], side: int) -> list[int]:
        normalized = self._normalized
        indices = []
        for record in records:
            title = normalized.get(record.title)
            if title is None:
                title = normalized[record.title] = normalize_title(record.title)
            self._add(record, self._prepare(record, title), side)
            indices.append(len(self._records) - 1)
        return [self._find(index) for index in indices]

    def key_of(self, record_index: int) -> int:
        """Current canonical key of the record added at ``record_index``."""
        return self._find(record_index)

    def papers(self) -> list[CanonicalPaper]:
        """All canonical papers, ordered by key."""
        groups: dict[int, list[PaperRecord]] = {}
        with no_cyclic_gc():
            for index, record in enumerate(self._records):
                groups.setdefault(self._find(index), []).append(record)
            return [
                canonical_paper(key, records, self._normalized)
                for key, records in sorted(groups.items())
            ]

    def __len__(self) -> int:
        return len(self._records)

    def _prepare(self, record: PaperRecord, normalized_title: str) -> _Prepared:
        facts = record_facts(record)
        return _Prepared(normalized_title, identifier_keys(record), facts)

    def _add(self, record: PaperRecord, prepared: _Prepared, side: int = 0) -> int:
        index = len(self._records)
        self._records.append(record)
        self._parent.append(index)
        if side:
            self._sides[index] = side
        self._facts[index] = prepared.facts
        self._cited.names |= prepared.facts.name_words
        self._cited.venues |= prepared.facts.venue_words
        for key in prepared.id_keys:
            first = self._by_identifier.setdefault(key, index)
            if first != index:
                self._union(index, first)
        title = prepared.normalized_title
        if title and not self._cited.is_generic(title):
            self._merge_by_title(index, title, side)
        return self._find(index)

    def _merge_by_title(self, index: int, normalized_title: str, side: int) -> None:
        title = self._titles[self._title_id(normalized_title, side)]
        for link in title.links:
            neighbour = self._titles[link.other]
            # Evidence lives on groups, so one record per group is enough; compacting here keeps
            # the list as short as the number of distinct papers with that title.
            neighbour.groups = list(dict.fromkeys(map(self._find, neighbour.groups)))
            for member in neighbour.groups:
                own, other = self._find(index), self._find(member)
                if (
                    own != other
                    and (not self._sides or self._may_join(own, other))
                    and self._same_paper(own, other, link)
                ):
                    self._union(own, other)
        title.groups.append(index)

    def _title_id(self, normalized_title: str, side: int = 0) -> int:
        """Id of a distinct title; a new title is scored against the earlier ones it blocks with.

        In an index with sides, titles are scored only against those of the other side, as
        only groups of two sides join by their titles: a title first seen on one side is
        scored against the other side's titles when a group of that side brings it again.
        """
        title_id = self._title_ids.get(normalized_title)
        if title_id is None:
            title_id = len(self._titles)
            words = tuple(normalized_title.split())
            title = _Title(normalized_title, words, sides=side)
            qualifier = title_qualifier(normalized_title)
            self._qualifiers.append(
                self._qualifier_ids.setdefault(qualifier, len(self._qualifier_ids))
            )
            title.links.append(TitleLink(title_id, same_title_features(words)))
            self._title_ids[normalized_title] = title_id
            self._titles.append(title)
            self._title_sides |= side
            for block in self._link_title(title_id, side):
                if len(block) < BLOCK_LIMIT:
                    block.append(title_id)
        elif side and not self._titles[title_id].sides & side:
            self._titles[title_id].sides |= side
            self._title_sides |= side
            self._link_title(title_id, side)
        return title_id

    def _link_title(self, title_id: int, side: int) -> list[list[int]]:
        """Link a title with the titles of its blocks it may merge with (those of the other
        side only, with a side); returns its blocks."""
        title = self._titles[title_id]
        words = title.words
        word_keys, edge_keys = block_keys(words)
        # A full block is made of common words and would compare this title with a share of the
        # index; the title's rarer keys find its near duplicates instead.
        word_blocks = [self._blocks.setdefault(key, []) for key in word_keys]
        edge_blocks = [self._blocks.setdefault(key, []) for key in edge_keys]
        other_side = _BOTH_SIDES & ~side if side else 0
        if other_side and not self._title_sides & other_side:
            return word_blocks + edge_blocks
        edge_candidates = self._candidates(edge_blocks, title_id, other_side)
        candidates = list(
            dict.fromkeys(self._candidates(word_blocks, title_id, other_side) + edge_candidates)
        )
        if candidates:
            texts = [self._titles[c].text for c in candidates]
            similar = [candidates[position] for position in similar_titles(title.text, texts)]
            # The same title with a citation or a subtitle around it shares its first or last
            # words, so only those blocks are searched for it.
            for other in dict.fromkeys(similar + edge_candidates):
                link = self._cited.link(words, self._titles[other].words, other, other in similar)
                if link is not None:
                    title.links.append(link)
                    self._titles[other].links.append(link.reverse(title_id))
        return word_blocks + edge_blocks

    def _candidates(self, blocks: list[list[int]], title_id: int, other_side: int) -> list[int]:
        """Distinct titles in blocks that are not full, with the qualifier of the title
        `title_id`; with `other_side`, only those seen on that side and not linked with it yet."""
        titles, qualifiers = self._titles, self._qualifiers
        seen = dict.fromkeys(chain.from_iterable(b for b in blocks if len(b) < BLOCK_LIMIT))
        qualifier = qualifiers[title_id]
        if not other_side:
            if len(self._qualifier_ids) == 1:  # every title's is the same (most indexes)
                return list(seen)
            return [c for c in seen if qualifiers[c] == qualifier]
        linked = {link.other for link in titles[title_id].links}
        return [
            c
            for c in seen
            if titles[c].sides & other_side and qualifiers[c] == qualifier and c not in linked
        ]

    def _same_paper(self, a: int, b: int, link: TitleLink) -> bool:
        """Whether two groups with linked titles are one paper, by the matcher's weights."""
        values = self._pair_values(a, b, link)
        return values is not None and self.matcher.same_paper(values)

    def _pair_values(self, a: int, b: int, link: TitleLink) -> tuple[float, ...] | None:
        """The matcher's features of two groups with linked titles, or None when an identifier
        or their years keep them apart."""
        values = pair_features(
            self._facts[a],
            self._facts[b],
            link,
            year_tolerance=self.year_tolerance,
            name_words=self._cited.names,
        )
        return None if values is None else link.features + values

    def _may_join(self, a: int, b: int) -> bool:
        """Whether the title rules may join two groups: not when both have a side and it is
        the same one (see ``add_groups``)."""
        side, other_side = self._sides.get(a, 0), self._sides.get(b, 0)
        return not (side and other_side) or side | other_side == _BOTH_SIDES

    def _find(self, index: int) -> int:
        parent = self._parent
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    def _union(self, a: int, b: int) -> None:
        a, b = self._find(a), self._find(b)
        if a == b:
            return
        # The smaller index stays root so a paper's key is its first record; the evidence of the
        # smaller group moves into the larger one so merging stays near-linear overall.
        root, child = min(a, b), max(a, b)
        kept, moved = self._facts.pop(root), self._facts.pop(child)
        if kept.size() < moved.size():
            kept, moved = moved, kept
        kept.absorb(moved)
        self._facts[root] = kept
        self._parent[child] = root
        if self._sides and (sides := self._sides.pop(child, 0) | self._sides.get(root, 0)):
            self._sides[root] = sides


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off for a while: merging papers allocates many small
    containers and no reference cycles; left on, it rescans the whole growing index (and the
    rest of the process's objects) again and again (~40 % of the time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
