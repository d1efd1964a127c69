"""Whether two groups of records with linked titles are one paper, by their other evidence. Pure.

A group (records the merge has joined) knows the years, author surnames, identifiers and venue
words of its records (``GroupFacts``). Two groups whose titles are linked
(``title_links.TitleLink``) are one paper when:

* no identifier kind both know disagrees, and no two of their years are further apart than the
  tolerance — a paper and its journal version years later stay two papers unless an identifier
  links them; a missing year never keeps them apart;
* the words after a shared title are a citation only on the other group's evidence (``cites``):
  a year, a surname it lists or a word of its venue among the first three words (initials
  aside) or two of its surnames anywhere, or the same names in both citations. Words merely
  seen in some record's author or venue field are no evidence, as titles are made of the same
  words: "X: strategies of national groundwater …" and "X: strategies of observed soil moisture
  …" are two papers. A citation's years and names then count as its group's own;
* then a shared author is enough (``share_author``: surnames compared tolerantly, in any order,
  with initials, cut short or one letter apart, ``authors.same_surname``); a year within
  tolerance is too, unless the link needs an author (a subtitle), or the year is one apart and
  both list authors and share none. Two titles that go on differently are two papers; similar
  titles whose endings differ in content words (not spelling) are one only with a shared author.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lyra_crawl.papers.authors import same_surname
from lyra_crawl.papers.title_links import TitleLink
from lyra_crawl.papers.titles import (
    citation_start,
    differ,
    extra_years,
    is_year,
    leading,
    spellings,
)

__all__ = ["GroupFacts", "cites", "corroborated", "share_author"]


@dataclass(slots=True)
class GroupFacts:
    """What a group of merged records knows, for deciding title merges with other groups."""

    years: set[int]
    surnames: set[str]
    ids: dict[str, set[str]]
    venue_words: set[str]

    def absorb(self, other: GroupFacts) -> None:
        self.years |= other.years
        self.surnames |= other.surnames
        self.venue_words |= other.venue_words
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


def corroborated(
    first: GroupFacts,
    second: GroupFacts,
    link: TitleLink,
    *,
    year_tolerance: int,
    name_words: set[str],
) -> bool:
    """Whether two groups with linked titles are one paper by their other evidence.

    Identifiers of one kind that disagree, or years further apart than the tolerance, keep
    them apart; a missing year never does. The words after a shared title are a citation
    only on the other group's evidence (``cites``); its years and names then count as its
    group's own. Then a shared author is enough; a year within tolerance
    is too, unless the link needs an author, or the year is one apart and both list authors
    and share none. Words after a title that are no citation are a subtitle: one title's
    needs a shared author, two that go on differently are two papers (similar titles whose
    subtitles differ in content words unless a shared author confirms). ``name_words``: the
    words of every author field the index has seen.
    """
    if not first.ids_agree(second):
        return False
    cited_here = bool(link.extra) and cites(link.extra, second, link.cited_names)
    cited_there = bool(link.other_extra) and cites(link.other_extra, first, link.cited_names)
    years = first.years | extra_years(link.extra) if cited_here else first.years
    other_years = second.years | extra_years(link.other_extra) if cited_there else second.years
    year_gap = min((abs(x - y) for x in years for y in other_years), default=None)
    if year_gap is not None and year_gap > year_tolerance:
        return False
    cited, other_cited = link.extra if cited_here else (), link.other_extra if cited_there else ()
    subtitles = (bool(link.extra) and not cited_here, bool(link.other_extra) and not cited_there)
    if link.evidence == "citation" and all(subtitles):
        return False  # two titles that go on differently
    shared_author = share_author(first, second, cited, other_cited, link.cited_names)
    if shared_author or link.evidence == "author" or year_gap is None:
        return shared_author
    if link.evidence == "citation" and any(subtitles):
        return False  # a subtitle needs a shared author
    if all(subtitles) and differ(link.extra, link.other_extra):
        return False  # so do subtitles that differ in content words
    listed = (first.surnames or name_words.intersection(cited)) and (
        second.surnames or name_words.intersection(other_cited)
    )
    if link.evidence == "citation":
        return not listed
    return year_gap == 0 or not listed


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
