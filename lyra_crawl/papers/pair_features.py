"""What two groups of records with linked titles say on whether they are one paper. Pure.

A group (records the merge has joined) knows the years, author names, identifiers and venue
words of its records (``GroupFacts``). Two groups whose titles are linked
(``title_links.TitleLink``, which carries the titles' own signals) are never one paper when an
identifier kind both know disagrees, or when two of their years are further apart than the
tolerance — a paper and its journal version years later stay two papers unless an identifier
links them. Otherwise ``pair_features`` gives the signals the matcher weighs
(``matcher.Matcher``), each in [0, 1]:

* the years: within the tolerance of each other (the index's ``year_tolerance``, the user's
  to set: one year by default, for a preprint or an online-first year), or unknown on a side (a
  missing year never keeps groups apart);
* the words after a shared title (``TitleLink.extra``): a citation of the other group's paper
  only on its evidence (``cites``: a year, a surname it lists or a word of its venue among the
  first words, or two of its surnames), its years and names then counting as the group's own;
  else a subtitle on one side, or subtitles on both that differ in content words;
* the authors: a shared surname, compared tolerantly (in any order, with initials, cut short,
  one letter apart: ``authors.same_surname``), in the fields or in a citation; both listing
  authors and sharing none; and the share of the shorter list's name words the other shows in
  any spelling (given names, names run together, mis-encoded letters), which still speaks when a
  garbled field can neither confirm nor veto;
* the venues: the share of the words (or the acronym) of one the other shows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from lyra_crawl.papers.authors import author_names, same_surname
from lyra_crawl.papers.identifiers import identifier_keys
from lyra_crawl.papers.records import PaperRecord
from lyra_crawl.papers.title_links import TitleLink, venue_words
from lyra_crawl.papers.titles import (
    citation_start,
    differ,
    extra_years,
    is_year,
    leading,
    spellings,
)

__all__ = [
    "GROUP_FEATURES",
    "GroupFacts",
    "cites",
    "pair_features",
    "record_facts",
    "share_author",
]

GROUP_FEATURES = (
    "years_agree",
    "year_unknown",
    "citation_read",
    "one_subtitle",
    "subtitles_differ",
    "author_shared",
    "authors_disjoint",
    "author_words",
    "venue_overlap",
)
_WORDS = re.compile(r"\W+")
# A name run together with others ("jfnaughton", "qluojfnaughton") shows a surname this long
# inside it.
_MIN_SURNAME_INSIDE = 4
_RUN_TOGETHER = 9


@dataclass(slots=True)
class GroupFacts:
    """What a group of merged records knows, for deciding title merges with other groups."""

    years: set[int]
    surnames: set[str]
    ids: dict[str, set[str]]
    venue_words: set[str]
    name_words: set[str]

    def absorb(self, other: GroupFacts) -> None:
        self.years |= other.years
        self.surnames |= other.surnames
        self.venue_words |= other.venue_words
        self.name_words |= other.name_words
        for kind, values in other.ids.items():
            self.ids.setdefault(kind, set()).update(values)

    def ids_agree(self, other: GroupFacts) -> bool:
        """Whether no identifier kind both know has values that disagree."""
        return all(
            not self.ids[kind].isdisjoint(other.ids[kind])
            for kind in self.ids.keys() & other.ids.keys()
        )

    def size(self) -> int:
        return len(self.years) + len(self.surnames) + sum(map(len, self.ids.values()))


def record_facts(record: PaperRecord) -> GroupFacts:
    """What one record knows; without a year of its own, the years its venue names ("VLDB
    2001", "Proc. SIGMOD '98" aside) are its years."""
    ids: dict[str, set[str]] = {}
    for kind, value in identifier_keys(record):
        ids.setdefault(kind, set()).add(value)
    surnames, name_words = author_names(record.authors)
    if record.year is not None:
        years = {record.year}
    else:
        years = extra_years(tuple(_WORDS.split(record.venue))) if record.venue else set()
    return GroupFacts(
        years=years,
        surnames=surnames,
        ids=ids,
        venue_words=set(venue_words(record.venue)) if record.venue else set(),
        name_words=name_words,
    )


def pair_features(
    first: GroupFacts,
    second: GroupFacts,
    link: TitleLink,
    *,
    year_tolerance: int,
    name_words: set[str],
) -> tuple[float, ...] | None:
    """The signals of two groups with linked titles (``GROUP_FEATURES``, in order), or None
    when an identifier or their years keep them apart. ``name_words``: the words of every
    author field the index has seen (a citation naming some lists authors)."""
    if not first.ids_agree(second):
        return None
    cited_here = bool(link.extra) and cites(link.extra, second, link.cited_names)
    cited_there = bool(link.other_extra) and cites(link.other_extra, first, link.cited_names)
    years = first.years | extra_years(link.extra) if cited_here else first.years
    other_years = second.years | extra_years(link.other_extra) if cited_there else second.years
    year_gap = min((abs(x - y) for x in years for y in other_years), default=None)
    if year_gap is not None and year_gap > year_tolerance:
        return None
    cited = link.extra if cited_here else ()
    other_cited = link.other_extra if cited_there else ()
    subtitle = bool(link.extra) and not cited_here
    other_subtitle = bool(link.other_extra) and not cited_there
    shared_author = share_author(first, second, cited, other_cited, link.cited_names)
    listed = bool(first.surnames or name_words.intersection(cited)) and bool(
        second.surnames or name_words.intersection(other_cited)
    )
    return (
        float(year_gap is not None),
        float(year_gap is None),
        float(cited_here or cited_there),
        float(subtitle != other_subtitle),
        float(subtitle and other_subtitle and differ(link.extra, link.other_extra)),
        float(shared_author),
        float(listed and not shared_author),
        _name_overlap(first.name_words, second.name_words),
        _venue_overlap(first.venue_words, second.venue_words),
    )


def cites(extra: tuple[str, ...], other: GroupFacts, names: frozenset[str]) -> bool:
    """Whether words after a title are a citation of the other group's paper: they show a
    year, or one of their first words that are neither stop words nor initials is a name
    both titles' citations show, a word of the other group's venue or a surname it lists,
    or they show two of its surnames. Words merely seen in some author or venue field of
    the index are no evidence: titles are made of them too."""
    if any(map(is_year, extra)):
        return True
    start = citation_start(extra)
    if any(word in names or word in other.venue_words for word in leading(start)):
        return True
    if not other.surnames:
        return False
    # A cited name may be split ("h a rder") where the other's author field has it whole.
    named = _named(spellings(extra), other.surnames)
    return len(named) >= 2 or bool(named and _named(spellings(start), named))


def share_author(
    first: GroupFacts,
    second: GroupFacts,
    cited: tuple[str, ...],
    other_cited: tuple[str, ...],
    cited_names: frozenset[str],
) -> bool:
    """Whether two groups name a common author: in their author fields, in both citations
    around their titles (unless both list authors in their fields), or a word of one's
    citation that matches a surname the other lists."""
    if not first.surnames.isdisjoint(second.surnames) or _named(first.surnames, second.surnames):
        return True
    if cited_names and not (first.surnames and second.surnames):
        return True
    return bool(
        _named(spellings(cited), second.surnames) or _named(spellings(other_cited), first.surnames)
    )


def _named(names: Iterable[str], surnames: set[str]) -> set[str]:
    """The surnames that one of the names is, tolerantly (``same_surname``)."""
    # A misspelt or shortened name keeps its first letter (see ``same_surname``).
    letters = {surname[0] for surname in surnames}
    return {
        surname
        for name in names
        if name[0] in letters
        for surname in surnames
        if name[0] == surname[0] and same_surname(name, surname)
    }


def _name_overlap(words: set[str], other_words: set[str]) -> float:
    """The share of the shorter list's name words that the other list shows: the same word,
    one spelt tolerantly (``same_surname``), or inside a name run together with others."""
    if not words or not other_words:
        return 0.0
    short, long = sorted((words, other_words), key=len)
    joined = [word for word in long if len(word) >= _RUN_TOGETHER]
    shown = sum(
        1
        for word in short
        if word in long
        or _named((word,), long)
        or (len(word) >= _MIN_SURNAME_INSIDE and any(word in run for run in joined))
    )
    return shown / len(short)


def _venue_overlap(words: set[str], other_words: set[str]) -> float:
    """The share of the shorter venue's words the other shows, the other's acronym counting as
    all of them ("vldb" for "very large data bases"; the words' order is not kept)."""
    if not words or not other_words:
        return 0.0
    short, long = sorted((words, other_words), key=len)
    if "".join(sorted(w[0] for w in long)) in {"".join(sorted(w)) for w in short}:
        return 1.0
    return len(short & long) / len(short)
