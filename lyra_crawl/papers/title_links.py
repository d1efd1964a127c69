"""How two titles may name one paper: the link between them, and the words around them. Pure.

Two titles are linked when they are similar (``similar_titles``: their normalised forms score
``SIMILAR_SCORE`` by ``fuzz.ratio`` or ``fuzz.token_set_ratio``), or when one is the other with
more words after a shared start of ``MIN_CONTAINED_WORDS`` content words at least (a citation
such as "X binto george , jayant r. haritsa sigmod conference 1997" or "X - Proceedings of the
VLDB", or a subtitle "X: how to Y"), or when one ends the other ("Y: X" and "X"). Titles are
read from their first words while they agree, allowing words run together and a typo
(``titles.align_start``). Whether the words after the shared start may be a citation is read
with the words of the author and venue fields an index has seen (``CitedWords``); whether they
are one, and whether the records are one paper, is the records' own evidence to say
(``pair_features``), weighed by the matcher (``matcher``) with the titles' own signals a link
carries (``TITLE_FEATURES``, each in [0, 1]): their similarity as characters (``fuzz.ratio``),
as sets of words (``token_set_ratio``), of the shorter inside the longer (``partial_ratio``,
for a title cut short), of their content words run together (OCR damage, words split or
joined), the share of each one's content words the other shows in any spelling
(containment both ways), how long the shorter is, the words before the part they share (another
title's start, "design of X", or a citation before it), and how they are linked. Titles that
name different numbers ("… workshop 8" and "… workshop 13", "… the Alps 156" and "… the Great
Plains 10") are never linked (``numbers_differ``): of the labelled judgements, one pair of such
titles in about seven thousand is one paper, against every one of 56,000 in the simulator's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from rapidfuzz import fuzz, process

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
    spellings,
)

__all__ = [
    "SIMILAR_SCORE",
    "TITLE_FEATURES",
    "CitedWords",
    "TitleLink",
    "cited_words",
    "numbers_differ",
    "same_title_features",
    "similar_titles",
    "title_features",
    "titles_could_link",
    "venue_words",
]

# Titles this similar as characters or as sets of words (rapidfuzz's 0-100 scores) are weighed
# by the matcher whatever else they share: it keeps nearly every title of the same paper that
# blocking finds, with records cut short, damaged or run into a citation, and leaves out most
# titles that only share words (DBLP-ACM and Cora: about a tenth of the pairs blocks find).
SIMILAR_SCORE = 80.0
TITLE_FEATURES = (
    "title_ratio",
    "title_token_set",
    "title_partial",
    "title_joined",
    "short_covered",
    "long_covered",
    "short_words",
    "lead_words",
    "lead_cited",
    "linked_as_citation",
    "linked_as_subtitle",
)
# The shorter title's content words up to this many tell how specific it is.
_SPECIFIC_WORDS = 10
# Content words before the part two titles share, up to this many.
_LEAD_WORDS = 4
# A number as a title shows it: "2", "8th", "21st", "2002" (not OCR's "gl0bal").
_NUMBER = re.compile(r"\d+(?:st|nd|rd|th)?")
# A word spelt this close (fuzz.ratio) is shown: OCR damage, a typo.
_SPELLING_SCORE = 80.0
_MIN_SPELLED_LENGTH = 5

_NONE: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class TitleLink:
    """Another title that may name the same paper, and the words each has beyond what they share.

    ``extra`` are this title's words after the part both share, ``other_extra`` the other's:
    a citation (names, venue, year) around a title, a subtitle, or nothing; the records' own
    evidence says which (``pair_features.cites``). ``cited_names``: words both citations
    show that name the same people. ``kind``: "similar" titles, titles that may be a
    "citation" apart after a long shared start, or a "subtitle" (one title ends the other, or
    has words after it that are no citation). ``features``: the titles' signals
    (``TITLE_FEATURES``; the same both ways).
    """

    other: int
    features: tuple[float, ...]
    kind: Literal["similar", "citation", "subtitle"] = "similar"
    extra: tuple[str, ...] = ()
    other_extra: tuple[str, ...] = ()
    cited_names: frozenset[str] = frozenset()

    def reverse(self, title_id: int) -> TitleLink:
        return TitleLink(
            title_id, self.features, self.kind, self.other_extra, self.extra, self.cited_names
        )


def cited_words(record: PaperRecord) -> tuple[set[str], frozenset[str]]:
    """The words of a record that a citation around a title is read with (see
    ``CitedWords``): those of its author names longer than an initial, and those of its venue."""
    return name_words(record.authors), venue_words(record.venue) if record.venue else _NONE


@lru_cache(maxsize=1 << 12)
def venue_words(venue: str) -> frozenset[str]:
    """A venue's folded words but stop words; few venues name many records."""
    return frozenset(fold_name(venue).split()) - STOPWORDS


def similar_titles(text: str, choices: Sequence[str]) -> list[int]:
    """The positions of the choices (normalised titles) similar to a normalised title: at least
    SIMILAR_SCORE by ``fuzz.ratio`` (spelling) or ``fuzz.token_set_ratio`` (words added, cut
    or moved), one C loop each."""
    found: dict[int, None] = {}
    for scorer in (fuzz.ratio, fuzz.token_set_ratio):
        for _, _, position in process.extract(
            text, choices, scorer=scorer, processor=None, score_cutoff=SIMILAR_SCORE, limit=None
        ):
            found[position] = None
    return list(found)


def titles_could_link(words: tuple[str, ...], other_words: tuple[str, ...]) -> bool:
    """Whether the index could link a title (its words) with an earlier one that is not
    similar to it (``similar_titles``), whatever author and venue words it knows
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


def title_features(
    words: tuple[str, ...],
    other_words: tuple[str, ...],
    kind: str = "similar",
    cited_word: Callable[[str], bool] | None = None,
) -> tuple[float, ...]:
    """The signals of two normalised titles (their words) linked as ``kind``
    (``TITLE_FEATURES``, in order; the same both ways). ``cited_word``: whether a word is one a
    citation is made of (``CitedWords.cited_word``), for the words before a title."""
    text, other_text = " ".join(words), " ".join(other_words)
    content = [word for word in words if word not in STOPWORDS] or list(words)
    other_content = [word for word in other_words if word not in STOPWORDS] or list(other_words)
    if len(content) > len(other_content) or (
        len(content) == len(other_content) and content > other_content
    ):
        content, other_content = other_content, content
    short, long = sorted((text, other_text), key=lambda title: (len(title), title))
    shown, other_shown = _shown(content, other_content), _shown(other_content, content)
    lead = max(_lead(content, shown), _lead(other_content, other_shown), key=len)
    return (
        fuzz.ratio(text, other_text) / 100,
        fuzz.token_set_ratio(text, other_text) / 100,
        fuzz.partial_ratio(short, long) / 100,
        fuzz.ratio("".join(content), "".join(other_content)) / 100,
        sum(shown) / len(shown),
        sum(other_shown) / len(other_shown),
        min(len(content), _SPECIFIC_WORDS) / _SPECIFIC_WORDS,
        min(len(lead), _LEAD_WORDS) / _LEAD_WORDS,
        float(bool(lead) and cited_word is not None and all(map(cited_word, lead))),
        float(kind == "citation"),
        float(kind == "subtitle"),
    )


def numbers_differ(words: tuple[str, ...], other_words: tuple[str, ...]) -> bool:
    """Whether both titles name numbers ("part 2", "the 8th workshop", "… 169") and not the
    same ones: numbered items of one kind are different items. Years are left to the records'
    years: in a title they are often a citation's."""
    numbers = {word for word in words if _NUMBER.fullmatch(word) and not is_year(word)}
    other_numbers = {word for word in other_words if _NUMBER.fullmatch(word) and not is_year(word)}
    return bool(numbers) and bool(other_numbers) and numbers != other_numbers


def same_title_features(words: tuple[str, ...]) -> tuple[float, ...]:
    """``title_features`` of a title with itself, without scoring it: every title is linked
    with itself, and most never with another."""
    content = sum(word not in STOPWORDS for word in words) or len(words)
    specific = min(content, _SPECIFIC_WORDS) / _SPECIFIC_WORDS
    return (1.0, 1.0, 1.0, 1.0, 1.0, 1.0, specific, 0.0, 0.0, 0.0, 0.0)


def _lead(words: list[str], shown: list[bool]) -> list[str]:
    """The words before the first the other title shows: another title's start ("design of
    X"), or a citation before the title."""
    return words[: shown.index(True)] if True in shown else words


def _shown(words: list[str], other_words: list[str]) -> list[bool]:
    """Whether the other title shows each word: the same word, its words run together
    ("deeplearning"), a long word inside one of its words run together ("relational" in
    "watermarkingrelational"), or a long word spelt close (OCR damage, a typo)."""
    present = set(other_words) | spellings(tuple(other_words))
    return [
        word in present
        or (
            len(word) >= _MIN_SPELLED_LENGTH
            and (
                any(word in other for other in other_words if len(other) > len(word))
                or process.extractOne(
                    word,
                    other_words,
                    scorer=fuzz.ratio,
                    processor=None,
                    score_cutoff=_SPELLING_SCORE,
                )
                is not None
            )
        )
        for word in words
    ]


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
        ``MIN_CONTAINED_WORDS`` content words. Similar titles (``similar_titles``) link
        whatever they share, with the words each has beyond it. Failing that, one title may be
        the other's end ("Y: X" and "X"), a subtitle too. Whether the words are a citation is
        each pair of records' to say.
        """
        if numbers_differ(words, other_words):
            return None
        if words[0][0] != other_words[0][0]:  # no start to align (see ``align_start``)
            return self._unaligned(words, other_words, other, similar)
        i, j = align_start(words, other_words)
        extra, other_extra = words[i:], other_words[j:]
        if not extra and not other_extra:
            return self._unaligned(words, other_words, other, True)  # the same but spelling
        core_size = content_words(words[:i])
        if not core_size or is_generic_title(" ".join(words[:i])):
            return self._unaligned(words, other_words, other, similar)
        long_core = core_size >= MIN_CONTAINED_WORDS
        if not (similar or long_core):
            return self._end_link(words, other_words, other)
        names = (
            self._cited_names(extra, other_extra)
            if long_core and extra and other_extra
            else frozenset()
        )
        if similar:
            features = title_features(words, other_words, cited_word=self.cited_word)
            return TitleLink(other, features, "similar", extra, other_extra, names)
        if names or (
            (not extra or self._citation(extra))
            and (not other_extra or self._citation(other_extra))
        ):
            features = title_features(words, other_words, "citation", self.cited_word)
            return TitleLink(other, features, "citation", extra, other_extra, names)
        if extra and other_extra:
            return self._end_link(words, other_words, other)
        # A subtitle: its words are no citation.
        features = title_features(words, other_words, "subtitle", self.cited_word)
        return TitleLink(other, features, "subtitle")

    def _unaligned(
        self, words: tuple[str, ...], other_words: tuple[str, ...], other: int, similar: bool
    ) -> TitleLink | None:
        """A link of similar titles with nothing to read after a shared start; else one title
        may end the other."""
        if similar:
            return TitleLink(other, title_features(words, other_words, "similar", self.cited_word))
        return self._end_link(words, other_words, other)

    def _end_link(
        self, words: tuple[str, ...], other_words: tuple[str, ...], other: int
    ) -> TitleLink | None:
        """A link when one title ends the other, a subtitle (or label) before it."""
        if not ends_other(words, other_words):
            return None
        features = title_features(words, other_words, "subtitle", self.cited_word)
        return TitleLink(other, features, "subtitle")

    def is_generic(self, normalized_title: str) -> bool:
        """Whether a title is generic, or generic with a citation after it ("book review column
        karl aberer sigmod record"): every word after the generic start is cited material."""
        start = GENERIC_START.match(normalized_title)
        if start is None:
            return False
        rest = normalized_title[start.end() :].split()
        return all(self.cited_word(word) for word in rest if word not in STOPWORDS)

    def cited_word(self, word: str) -> bool:
        """An initial (or a digit), a year, or a word of an author or venue field."""
        return len(word) == 1 or is_year(word) or word in self.names or word in self.venues

    def _citation(self, extra: tuple[str, ...]) -> bool:
        """Whether words after a title may be a citation, to link the titles: they show a year
        or two words of author fields, or one of their first three words that are not stop
        words is an initial or a word of an author or venue field. Whether they are one is the
        records' to say (``pair_features.cites``)."""
        leading_words = [word for word in extra if word not in STOPWORDS][:CITATION_START]
        return (
            any(map(self.cited_word, leading_words))
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
