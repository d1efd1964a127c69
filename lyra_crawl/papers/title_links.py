"""How two titles may name one paper: the link between them, and the words around them. Pure.

Two titles are linked when their normalised forms score ``fuzz.ratio >= TITLE_THRESHOLD``, or
when one is the other with more words after a shared start of ``MIN_CONTAINED_WORDS`` content
words at least (a citation such as "X binto george , jayant r. haritsa sigmod conference 1997"
or "X - Proceedings of the VLDB", or a subtitle "X: how to Y"), or when one ends the other ("Y:
X" and "X"). Titles are read from their first words while they agree, allowing words run
together and a typo (``titles.align_start``). Whether the words after the shared start may be a
citation is read with the words of the author and venue fields an index has seen
(``CitedWords``); whether they are one, and whether the records are one paper, is the records'
own evidence to say (``corroboration``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from lyra_crawl.papers.authors import fold_name, name_words
from lyra_crawl.papers.records import PaperRecord
from lyra_crawl.papers.title_normalization import GENERIC_START, is_generic_title
from lyra_crawl.papers.titles import (
    CITATION_START,
    MIN_CONTAINED_WORDS,
    STOPWORDS,
    align_start,
    content_words,
    ends_other,
    is_year,
    leading,
    own_words,
)

__all__ = [
    "TITLE_THRESHOLD",
    "CitedWords",
    "TitleLink",
    "cited_words",
    "titles_could_link",
    "venue_words",
]

# Titles this similar (fuzz.ratio of the normalised titles) may name the same paper.
TITLE_THRESHOLD = 90.0

_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class TitleLink:
    """Another title that may name the same paper, and the words each has beyond what they share.

    ``extra`` are this title's words after the part both share, ``other_extra`` the other's:
    a citation (names, venue, year) around a title, a subtitle, or nothing; the records' own
    evidence says which (``corroboration.cites``). ``cited_names``: words both citations
    show that name the same people. ``evidence`` says what else must agree: "year" for titles
    that are similar (a year or a shared author will do), "citation" for titles that may be a
    citation apart (the same, but not when both list authors and share none), "author" for a
    subtitle (a shared author).
    """

    other: int
    evidence: Literal["year", "citation", "author"] = "year"
    extra: tuple[str, ...] = ()
    other_extra: tuple[str, ...] = ()
    cited_names: frozenset[str] = frozenset()

    def reverse(self, title_id: int) -> TitleLink:
        return TitleLink(title_id, self.evidence, self.other_extra, self.extra, self.cited_names)


def cited_words(record: PaperRecord) -> tuple[set[str], frozenset[str]]:
    """The words of a record that a citation around a title is read with (see
    ``CitedWords``): those of its author names longer than an initial, and those of its venue."""
    return name_words(record.authors), venue_words(record.venue) if record.venue else _NONE


@lru_cache(maxsize=1 << 12)
def venue_words(venue: str) -> frozenset[str]:
    """A venue's folded words but stop words; few venues name many records."""
    return frozenset(fold_name(venue).split()) - STOPWORDS


def titles_could_link(words: tuple[str, ...], other_words: tuple[str, ...]) -> bool:
    """Whether the index could link a title (its words) with an earlier one it is not
    TITLE_THRESHOLD similar to, whatever author and venue words it knows
    (``CitedWords.link``): they agree from the start on all their words, or on a start of at
    least ``MIN_CONTAINED_WORDS`` content words that is not generic, or one ends the other."""
    if words[0][0] == other_words[0][0]:
        i, j = align_start(words, other_words)
        if i == len(words) and j == len(other_words):
            return True
        start = words[:i]
        if content_words(start) >= MIN_CONTAINED_WORDS and not is_generic_title(" ".join(start)):
            return True
    return ends_other(words, other_words)


@dataclass
class CitedWords:
    """Words seen in the author and venue fields of records (``cited_words``): what a citation
    around a title is made of. Titles are linked, and generic titles told, with them."""

    names: set[str] = field(default_factory=set)
    venues: set[str] = field(default_factory=set)

    def link(
        self, words: tuple[str, ...], other_words: tuple[str, ...], other: int, similar: bool
    ) -> TitleLink | None:
        """How a new title relates to an earlier candidate, or None when they name two papers.

        Both are read from their first words while they agree (``align_start``); what each has
        beyond that may be a citation when it could start like one or both name the same people
        there, and is a subtitle when only one has more; either needs a shared part of at least
        ``MIN_CONTAINED_WORDS`` content words. Similar titles link whatever they share, with
        the words each has beyond it. Failing that, one title may be the other's end ("Y: X" and
        "X"), a subtitle too. Whether the words are a citation is each pair of records' to say.
        """
        if words[0][0] != other_words[0][0]:  # no start to align (see ``align_start``)
            return TitleLink(other) if similar else _end_link(words, other_words, other)
        i, j = align_start(words, other_words)
        extra, other_extra = words[i:], other_words[j:]
        if not extra and not other_extra:
            return TitleLink(other)  # the same words but for their spelling
        core_size = content_words(words[:i])
        if not core_size or is_generic_title(" ".join(words[:i])):
            return TitleLink(other) if similar else _end_link(words, other_words, other)
        long_core = core_size >= MIN_CONTAINED_WORDS
        if not (similar or long_core):
            return _end_link(words, other_words, other)
        names = (
            self._cited_names(extra, other_extra)
            if long_core and extra and other_extra
            else frozenset()
        )
        if similar:
            return TitleLink(other, "year", extra, other_extra, names)
        if names or (
            (not extra or self._citation(extra))
            and (not other_extra or self._citation(other_extra))
        ):
            return TitleLink(other, "citation", extra, other_extra, names)
        if extra and other_extra:
            return _end_link(words, other_words, other)
        return TitleLink(other, "author")  # a subtitle: its words are no citation

    def is_generic(self, normalized_title: str) -> bool:
        """Whether a title is generic, or generic with a citation after it ("book review column
        karl aberer sigmod record"): every word after the generic start is cited material."""
        start = GENERIC_START.match(normalized_title)
        if start is None:
            return False
        rest = normalized_title[start.end() :].split()
        return all(self._cited_word(word) for word in rest if word not in STOPWORDS)

    def _cited_word(self, word: str) -> bool:
        """An initial (or a digit), a year, or a word of an author or venue field."""
        return len(word) == 1 or is_year(word) or word in self.names or word in self.venues

    def _citation(self, extra: tuple[str, ...]) -> bool:
        """Whether words after a title may be a citation, to link the titles: they show a year
        or two words of author fields, or one of their first three words that are not stop
        words is an initial or a word of an author or venue field. Whether they are one is the
        records' to say (``corroboration.cites``)."""
        leading_words = [word for word in extra if word not in STOPWORDS][:CITATION_START]
        return (
            any(map(self._cited_word, leading_words))
            or any(map(is_year, extra))
            or len(self.names.intersection(extra)) >= 2
        )

    def _cited_names(self, extra: tuple[str, ...], other_extra: tuple[str, ...]) -> frozenset[str]:
        """Words both citations show that name the same people (one author list, in another
        order perhaps): at least two words that make up half of either citation's words that
        are neither venue words nor years, one citation starting with one of them, and at most
        one citation with words of its own. Two subtitles that go on differently share words
        too, but each has its own."""
        words, other_words = self._name_like(extra), self._name_like(other_extra)
        shared = words & other_words
        if len(shared) < 2 or 2 * len(shared) < min(len(words), len(other_words)):
            return frozenset()
        firsts = {leading(tail)[0] for tail in (extra, other_extra) if leading(tail)}
        if firsts.isdisjoint(shared):
            return frozenset()
        own = own_words(extra, other_extra) - self.venues
        if own and own_words(other_extra, extra) - self.venues:
            return frozenset()
        return frozenset(shared)

    def _name_like(self, extra: tuple[str, ...]) -> set[str]:
        words = set(extra) - STOPWORDS - self.venues
        return {word for word in words if len(word) > 1 and word.isalpha()}


def _end_link(words: tuple[str, ...], other_words: tuple[str, ...], other: int) -> TitleLink | None:
    """A link when one title ends the other, a subtitle (or label) before it."""
    return TitleLink(other, "author") if ends_other(words, other_words) else None
