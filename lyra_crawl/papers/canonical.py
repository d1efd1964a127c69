"""CanonicalPaperIndex: merge records of the same paper from SERP engines and scholarly APIs.

Pure logic, no Scrapy imports. Two records are the same paper when

* they share a DOI, an arXiv id or a PMID — transitively, so a Semantic Scholar record carrying
  both a journal DOI and an arXiv id joins the journal version and the preprint; or
* their normalised titles (see ``normalize_title``) score ``fuzz.ratio >= title_threshold``
  and a second signal agrees: a year within ``year_tolerance`` or a shared author surname —
  but a year one apart is no evidence when both list authors and share none; or
* one title is the other with a citation after it ("X binto george , jayant r. haritsa sigmod
  conference 1997", "X - Proceedings of the VLDB"), the years and names in the citation
  counting as the record's own, and a shared author or a year within tolerance agrees — a
  year only when they do not both list authors and share none; or
* one normalised title is the other plus a subtitle ("X" vs "X: how to Y") and they share an
  author surname.

Titles are read from their first words while they agree, allowing words run together and a
typo (``titles.align_start``). What follows the shared start is a citation only on evidence the
other record gives: a year, a surname it lists or a word of its venue among the first three
words (initials aside) or two of its surnames anywhere, or the same names in both citations (an
author list in another order). Words merely seen in some record's author or venue field are no
evidence, as titles are made of the same words: "X: strategies of national groundwater …" and
"X: strategies of observed soil moisture …" are two papers, whatever the index has seen. Two
titles that go on differently are two papers; similar titles whose endings differ in content
words (not spelling) are one only with a shared author. Author surnames are compared
tolerantly: in any order, with initials, cut short or one letter apart
(``authors.same_surname``). A missing year never keeps records apart; only a contradicting one
does.

Title merges are refused when the titles are generic ("Editorial", "Book reviews", …), when one
is a notice about the other ("Erratum: X") or a different part ("X, part II"), when both papers
carry identifiers of one kind that disagree (two different DOIs), and when both carry years
further apart than the tolerance — a paper and its journal version years later stay two papers
unless an identifier links them.

Evidence (years, surnames, identifiers) is kept per canonical paper, a union-find group, so a
SERP record without authors can join through the year of an API record already in the group.
Title scoring is blocked: each distinct title is scored, in one rapidfuzz call, only against
earlier titles that share a pair of its longest words, its first or last words, or the first or
last characters of its words run together, and blocks of common words stop growing, which
keeps the cost per record flat as the index grows.
"""

from __future__ import annotations

import gc
import html
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import combinations
from typing import Literal

from rapidfuzz import fuzz, process

from lyra_crawl.papers.authors import author_names, fold_name, name_words, same_surname
from lyra_crawl.papers.identifiers import (
    ARXIV_DOI_PREFIX,
    arxiv_id_from_doi,
    normalize_arxiv_id,
    normalize_doi,
    normalize_pmid,
)
from lyra_crawl.papers.titles import align_start, extra_years, is_year, one_letter_apart
from lyra_crawl.results import ResultFields, ResultKind

__all__ = [
    "BLOCK_LIMIT",
    "TITLE_THRESHOLD",
    "Attribution",
    "CanonicalPaper",
    "CanonicalPaperIndex",
    "PaperRecord",
    "RecordKind",
    "Side",
    "cited_words",
    "identifier_keys",
    "is_generic_title",
    "no_cyclic_gc",
    "normalize_title",
    "title_block_keys",
    "titles_could_link",
]

Attribution = Literal["both", "api_only", "serp_only"]
RecordKind = ResultKind
# Of groups added with add_groups: a store's index holds its stored papers and a query's new ones.
Side = Literal["stored", "new"]
_SIDE_BITS: dict[Side, int] = {"stored": 1, "new": 2}
_BOTH_SIDES = 3


@dataclass(kw_only=True)
class PaperRecord(ResultFields):
    """One result about a paper, from one source (a SERP engine or a scholarly API)."""

    source: str
    title: str
    kind: RecordKind = "api"
    url: str | None = None


@dataclass
class CanonicalPaper:
    """One paper with its merged records and the richest value of each field."""

    key: int
    records: list[PaperRecord]
    doi: str | None
    arxiv_id: str | None
    pmid: str | None
    title: str
    normalized_title: str
    year: int | None
    authors: tuple[str, ...]
    venue: str | None
    abstract: str | None
    sources: set[str]
    attribution: Attribution


# Labels that venues put in or around a title for the kind of contribution, not its subject:
# "X (Tutorial)", "X (panel session): Y", "Tutorial: X", "X: a tutorial", "X (abstract only)".
_LABEL = (
    r"(?:tutorial|demo|demonstration|poster|panel|keynote|abstract|work in progress"
    r"|(?:invited|extended|short|full|experience|position|industrial|preliminary)"
    r"\s+(?:session|abstract|paper|version|talk|address|track|report))"
    r"(?:\s+(?:session|abstract|description|summary|discussion|only|paper|version|talk|address"
    r"|track|report))*"
)
_LABEL_WORD = re.compile(
    r"tutorial|demo|poster|panel|keynote|abstract|invited|extended|short|full|experience"
    r"|position|industrial|preliminary|work in progress"
)
_NOISE_LABELS = (
    re.compile(rf"\s*[(\[]\s*{_LABEL}\s*[)\]]"),
    re.compile(r"^\s*(?:tutorial|panel|keynote|demo|demonstration|poster)\s*(?:on\b|:|-)\s*"),
    re.compile(rf"\s*[:\-\u2013\u2014?.!,]\s*(?:an?\s+)?{_LABEL}\s*\.?\s*$"),
)
_NON_WORD = re.compile(r"[\W_]+")
# Google Scholar puts the kind of a result before its title: "[PDF] ", "[BOOK] [B] ", "[C] ".
_RESULT_LABELS = re.compile(r"^(?:\s*\[[a-z]{1,8}\])+\s*")
# A results page cuts a long title short ("... sleep : A ... - ScienceDirect"); NFKD makes "…"
# three dots. What follows the cut is the site's name, not the title.
_SHORTENED = re.compile(r"\s*\.\.\..*$")

# Front matter and recurring columns: the same title names many different items.
_GENERIC_TITLE = re.compile(
    r"(?:guest |the )?editorials?(?: notes?| comments?)?"
    r"|(?:guest |the )?(?:editor|chair|president|treasurer|secretary|organizer)(?: s|s)?"
    r" (?:notes?|messages?|introduction|column|letter|corner|foreword|preface|remarks|welcome)"
    r"|(?:a )?(?:letters?|message|note|welcome) (?:from|to) the (?:editors?|chairs?|president)"
    r"|from the editors?|book reviews?(?: column)?|reviews?|preface|foreword|introduction"
    r"|keynote(?: address| talk| speech)?|invited talks?|panel(?: discussion| session)?"
    r"|errat(?:a|um)|corrigend(?:a|um)|corrections?|retraction(?: notice)?|in memoriam"
    r"|obituary|(?:reminiscences on )?influential papers|news|announcements?"
    r"|call for (?:papers|participation)|reports?|acknowledge?ments?|(?:list of )?reviewers"
    r"|referees|(?:author )?index|(?:table of )?contents|front matter|back matter|masthead"
    r"|opening remarks|closing remarks|abstracts|articles|columns?|letters|correspondence"
)

# A generic title, alone or at the start of a longer one.
_GENERIC_START = re.compile(rf"(?:{_GENERIC_TITLE.pattern})(?= |$)")

_STOPWORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "of", "on", "or"}
    | {"over", "the", "to", "towards", "toward", "under", "using", "via", "with", "without"}
)
# Notices about a paper are other items than the paper: "Erratum: X" never merges with "X".
_NOTICE = re.compile(
    r"^(?:an? )?(?:errat(?:a|um)|corrigend(?:a|um)|addendum|correction|retraction"
    r"|expression of concern|comments? on|reply to|response to|rebuttal)\b"
)
# "X, part I" and "X, part II" are two papers although their titles score 99.
_PART = re.compile(r"\b(?:part|vol|volume|chapter)\s+(\w+)")
# Pairs of a title's longest words are its blocking keys: long words are rare, and a near
# duplicate keeps at least two of its four longest words after a typo or a changed word.
_BLOCK_WORDS = 4
# Its first and last content words find the same title with a subtitle added or dropped.
_EDGE_WORDS = 3
# A block this full is made of common words; it stops growing so that no title is compared with
# an ever larger share of the index. Titles sharing only such blocks are then not compared.
BLOCK_LIMIT = 32
# The shorter title needs this many content words for a subtitle match ("XML" is no evidence).
_MIN_CONTAINED_WORDS = 3
# Characters of the run-together content words that key a title's joined blocks.
_JOINED_KEY_LENGTH = 16
# Titles this similar (fuzz.ratio of the normalised titles) may name the same paper.
TITLE_THRESHOLD = 90.0
# A citation after a title starts with a name, an initial, a venue or a year within its first
# three words ("J. Smith", "A. B. Smith", "Kun-Lung Wu", "Proc. VLDB").
_CITATION_START = 3


def normalize_title(title: str) -> str:
    """Title for comparison: entities decoded, NFKD without accents, lower-case, a results
    page's "[PDF]" before it and whatever follows "..." (where the page cut it short) dropped,
    venue labels such as "(tutorial)" removed, punctuation to spaces, whitespace folded."""
    text = _fold(title)
    if "[" in text:
        text = _RESULT_LABELS.sub("", text)
    if "..." in text:
        text = _SHORTENED.sub("", text)
    for pattern in _NOISE_LABELS if _LABEL_WORD.search(text) else ():
        stripped = pattern.sub("", text)
        if _NON_WORD.sub("", stripped):  # a title that is only a label ("Panel") stays whole
            text = stripped
    return " ".join(_NON_WORD.sub(" ", text).split())


def is_generic_title(normalized: str) -> bool:
    """Whether a normalised title names front matter or a column rather than one paper."""
    return _GENERIC_TITLE.fullmatch(normalized) is not None


def title_block_keys(normalized_title: str) -> tuple[list[str], list[str]]:
    """The blocking keys of a normalised title as text, its word keys and its edge keys (the
    index's own blocking, for a store's index of stored titles): a title is scored against the
    titles sharing a word key, and those at least TITLE_THRESHOLD similar may be linked with it;
    the titles sharing an edge key may be linked whatever their score."""
    word_keys, edge_keys = _block_keys(tuple(normalized_title.split()))
    return [" ".join(key) for key in word_keys], [" ".join(key) for key in edge_keys]


def identifier_keys(record: PaperRecord) -> tuple[tuple[str, str], ...]:
    """The record's identifiers as the index joins them: (doi|arxiv|pmid, normalised value)."""
    return _identifier_keys(record)


def cited_words(record: PaperRecord) -> tuple[set[str], frozenset[str]]:
    """The words of a record that a citation around a title is read with (see ``_citation``):
    those of its author names longer than an initial, and those of its venue."""
    return name_words(record.authors), _venue_words(record.venue) if record.venue else _NONE


@dataclass(slots=True)
class _Evidence:
    """What a group of merged records knows, for deciding title merges with other groups."""

    years: set[int]
    surnames: set[str]
    ids: dict[str, set[str]]
    venue_words: set[str]

    def absorb(self, other: _Evidence) -> None:
        self.years |= other.years
        self.surnames |= other.surnames
        self.venue_words |= other.venue_words
        for kind, values in other.ids.items():
            self.ids.setdefault(kind, set()).update(values)

    def ids_agree(self, other: _Evidence) -> bool:
        """Whether no identifier kind both know has values that disagree."""
        return all(
            not self.ids[kind].isdisjoint(other.ids[kind])
            for kind in self.ids.keys() & other.ids.keys()
        )

    def size(self) -> int:
        return len(self.years) + len(self.surnames) + sum(map(len, self.ids.values()))


@dataclass(slots=True)
class _Prepared:
    normalized_title: str
    id_keys: tuple[tuple[str, str], ...]
    evidence: _Evidence
    name_words: set[str]


@dataclass(frozen=True, slots=True)
class _Link:
    """Another title that may name the same paper, and the words each has beyond what they share.

    ``extra`` are this title's words after the part both share, ``other_extra`` the other's:
    a citation (names, venue, year) around a title, a subtitle, or nothing; the records' own
    evidence says which (``CanonicalPaperIndex._cites``). ``cited_names``: words both citations
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

    def reverse(self, title_id: int) -> _Link:
        return _Link(title_id, self.evidence, self.other_extra, self.extra, self.cited_names)


@dataclass(slots=True)
class _Title:
    """One distinct normalised title and the earlier titles it may merge with."""

    text: str
    words: tuple[str, ...]
    qualifier: tuple[str, frozenset[str]]  # notice kind and part numbers; must be equal to merge
    groups: list[int] = field(default_factory=list)  # one record per paper seen with this title
    links: list[_Link] = field(default_factory=list)  # itself included
    sides: int = 0  # the side bits of the groups seen with it (an index with sides)


class CanonicalPaperIndex:
    """Incremental index that groups records into canonical papers.

    Keys are record indices (the order of ``add``/``add_many``): a paper's key is the index of
    its first record, so a key can change to a smaller one when a later record joins two papers.
    """

    def __init__(
        self, *, title_threshold: float = TITLE_THRESHOLD, year_tolerance: int = 1
    ) -> None:
        self.title_threshold = title_threshold
        self.year_tolerance = year_tolerance
        self._records: list[PaperRecord] = []
        self._parent: list[int] = []
        self._evidence: dict[int, _Evidence] = {}
        self._by_identifier: dict[tuple[str, str], int] = {}
        self._title_ids: dict[str, int] = {}
        self._titles: list[_Title] = []
        self._blocks: dict[tuple[str, ...], list[int]] = {}
        # Words seen in author and venue fields: what a citation around a title is made of.
        self._name_words: set[str] = set()
        self._venue_words: set[str] = set()
        # The side bits of groups added with a side, by their key; empty in a plain index.
        self._sides: dict[int, int] = {}
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
        if self._evidence[self._find(index)].ids_agree(self._evidence[self._find(as_record)]):
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
        self._name_words.update(names)
        self._venue_words.update(venues)

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
                _canonical_paper(key, records, self._normalized)
                for key, records in sorted(groups.items())
            ]

    def __len__(self) -> int:
        return len(self._records)

    def _prepare(self, record: PaperRecord, normalized_title: str) -> _Prepared:
        id_keys = _identifier_keys(record)
        ids: dict[str, set[str]] = {}
        for kind, value in id_keys:
            ids.setdefault(kind, set()).add(value)
        surnames, name_words = author_names(record.authors)
        years = {record.year} if record.year is not None else set()
        venue = set(_venue_words(record.venue)) if record.venue else set()
        return _Prepared(
            normalized_title=normalized_title,
            id_keys=id_keys,
            evidence=_Evidence(years=years, surnames=surnames, ids=ids, venue_words=venue),
            name_words=name_words,
        )

    def _add(self, record: PaperRecord, prepared: _Prepared, side: int = 0) -> int:
        index = len(self._records)
        self._records.append(record)
        self._parent.append(index)
        if side:
            self._sides[index] = side
        self._evidence[index] = prepared.evidence
        self._name_words |= prepared.name_words
        self._venue_words |= prepared.evidence.venue_words
        for key in prepared.id_keys:
            first = self._by_identifier.setdefault(key, index)
            if first != index:
                self._union(index, first)
        title = prepared.normalized_title
        if title and not self._generic(title):
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
                    and self._corroborated(own, other, link)
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
            title = _Title(normalized_title, words, _qualifier(normalized_title), sides=side)
            title.links.append(_Link(title_id))
            self._title_ids[normalized_title] = title_id
            self._titles.append(title)
            for block in self._link_title(title_id, side):
                if len(block) < BLOCK_LIMIT:
                    block.append(title_id)
        elif side and not self._titles[title_id].sides & side:
            self._titles[title_id].sides |= side
            self._link_title(title_id, side)
        return title_id

    def _link_title(self, title_id: int, side: int) -> list[list[int]]:
        """Link a title with the titles of its blocks it may merge with (those of the other
        side only, with a side); returns its blocks."""
        title = self._titles[title_id]
        words = title.words
        word_keys, edge_keys = _block_keys(words)
        # A full block is made of common words and would compare this title with a share of the
        # index; the title's rarer keys find its near duplicates instead.
        word_blocks = [self._blocks.setdefault(key, []) for key in word_keys]
        edge_blocks = [self._blocks.setdefault(key, []) for key in edge_keys]
        other_side = _BOTH_SIDES & ~side if side else 0
        edge_candidates = self._candidates(edge_blocks, title, other_side)
        candidates = list(
            dict.fromkeys(self._candidates(word_blocks, title, other_side) + edge_candidates)
        )
        if candidates:
            similar = self._similar(title, candidates)
            # The same title with a citation or a subtitle around it shares its first or last
            # words, so only those blocks are searched for it.
            for other in dict.fromkeys(similar + edge_candidates):
                link = self._link(words, self._titles[other].words, other, other in similar)
                if link is not None:
                    title.links.append(link)
                    self._titles[other].links.append(link.reverse(title_id))
        return word_blocks + edge_blocks

    def _similar(self, title: _Title, candidates: list[int]) -> list[int]:
        """Candidates whose text scores at least the threshold.

        The ratio is an edit similarity of the characters, spaces included, so words run
        together cost a few points only ("deeplearning for image recognition": 1.4).
        """
        matches = process.extract(
            title.text,
            [self._titles[c].text for c in candidates],
            scorer=fuzz.ratio,
            processor=None,
            score_cutoff=self.title_threshold,
            limit=None,
        )
        return [candidates[position] for _, _, position in matches]

    def _link(
        self, words: tuple[str, ...], other_words: tuple[str, ...], other: int, similar: bool
    ) -> _Link | None:
        """How a new title relates to an earlier candidate, or None when they name two papers.

        Both are read from their first words while they agree (``align_start``); what each has
        beyond that may be a citation when it could start like one or both name the same people
        there, and is a subtitle when only one has more; either needs a shared part of at least
        ``_MIN_CONTAINED_WORDS`` content words. Similar titles link whatever they share, with
        the words each has beyond it. Failing that, one title may be the other's end ("Y: X" and
        "X"), a subtitle too. Whether the words are a citation is each pair of records' to say.
        """
        if words[0][0] != other_words[0][0]:  # no start to align (see ``align_start``)
            return _Link(other) if similar else self._end_link(words, other_words, other)
        i, j = align_start(words, other_words)
        extra, other_extra = words[i:], other_words[j:]
        if not extra and not other_extra:
            return _Link(other)  # the same words but for their spelling
        core_size = _content_words(words[:i])
        if not core_size or is_generic_title(" ".join(words[:i])):
            return _Link(other) if similar else self._end_link(words, other_words, other)
        long_core = core_size >= _MIN_CONTAINED_WORDS
        if not (similar or long_core):
            return self._end_link(words, other_words, other)
        names = (
            self._cited_names(extra, other_extra)
            if long_core and extra and other_extra
            else frozenset()
        )
        if similar:
            return _Link(other, "year", extra, other_extra, names)
        if names or (
            (not extra or self._citation(extra))
            and (not other_extra or self._citation(other_extra))
        ):
            return _Link(other, "citation", extra, other_extra, names)
        if extra and other_extra:
            return self._end_link(words, other_words, other)
        return _Link(other, "author")  # a subtitle: its words are no citation

    def _end_link(
        self, words: tuple[str, ...], other_words: tuple[str, ...], other: int
    ) -> _Link | None:
        """A link when one title ends the other, a subtitle (or label) before it."""
        return _Link(other, "author") if _ends_other(words, other_words) else None

    def _generic(self, normalized_title: str) -> bool:
        """Whether a title is generic, or generic with a citation after it ("book review column
        karl aberer sigmod record"): every word after the generic start is cited material."""
        start = _GENERIC_START.match(normalized_title)
        if start is None:
            return False
        rest = normalized_title[start.end() :].split()
        return all(self._cited_word(word) for word in rest if word not in _STOPWORDS)

    def _cited_word(self, word: str) -> bool:
        """An initial (or a digit), a year, or a word of an author or venue field."""
        return (
            len(word) == 1 or is_year(word) or word in self._name_words or word in self._venue_words
        )

    def _citation(self, extra: tuple[str, ...]) -> bool:
        """Whether words after a title may be a citation, to link the titles: they show a year
        or two words of author fields, or one of their first three words that are not stop
        words is an initial or a word of an author or venue field. Whether they are one is the
        records' to say (``_cites``)."""
        leading = [word for word in extra if word not in _STOPWORDS][:_CITATION_START]
        return (
            any(map(self._cited_word, leading))
            or any(map(is_year, extra))
            or len(self._name_words.intersection(extra)) >= 2
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
        firsts = {_leading(tail)[0] for tail in (extra, other_extra) if _leading(tail)}
        if firsts.isdisjoint(shared):
            return frozenset()
        own = _own_words(extra, other_extra) - self._venue_words
        if own and _own_words(other_extra, extra) - self._venue_words:
            return frozenset()
        return frozenset(shared)

    def _name_like(self, extra: tuple[str, ...]) -> set[str]:
        words = set(extra) - _STOPWORDS - self._venue_words
        return {word for word in words if len(word) > 1 and word.isalpha()}

    def _candidates(self, blocks: list[list[int]], title: _Title, other_side: int) -> list[int]:
        """Distinct titles in blocks that are not full, with `title`'s qualifier; with
        `other_side`, only those seen on that side and not linked with `title` yet."""
        titles = self._titles
        seen = dict.fromkeys(c for block in blocks if len(block) < BLOCK_LIMIT for c in block)
        qualifier = title.qualifier
        if not other_side:
            return [c for c in seen if titles[c].qualifier == qualifier]
        linked = {link.other for link in title.links}
        return [
            c
            for c in seen
            if titles[c].sides & other_side and titles[c].qualifier == qualifier and c not in linked
        ]

    def _corroborated(self, a: int, b: int, link: _Link) -> bool:
        """Whether two groups with linked titles are one paper by their other evidence.

        Identifiers of one kind that disagree, or years further apart than the tolerance, keep
        them apart; a missing year never does. The words after a shared title are a citation
        only on the other group's evidence (``_cites``); its years and names then count as its
        group's own. Then a shared author is enough; a year within tolerance
        is too, unless the link needs an author, or the year is one apart and both list authors
        and share none. Words after a title that are no citation are a subtitle: one title's
        needs a shared author, two that go on differently are two papers (similar titles whose
        subtitles differ in content words unless a shared author confirms).
        """
        first, second = self._evidence[a], self._evidence[b]
        if not first.ids_agree(second):
            return False
        cites = bool(link.extra) and self._cites(link.extra, second, link.cited_names)
        other_cites = bool(link.other_extra) and self._cites(
            link.other_extra, first, link.cited_names
        )
        years = first.years | extra_years(link.extra) if cites else first.years
        other_years = second.years | extra_years(link.other_extra) if other_cites else second.years
        year_gap = min((abs(x - y) for x in years for y in other_years), default=None)
        if year_gap is not None and year_gap > self.year_tolerance:
            return False
        cited, other_cited = link.extra if cites else (), link.other_extra if other_cites else ()
        subtitles = (bool(link.extra) and not cites, bool(link.other_extra) and not other_cites)
        if link.evidence == "citation" and all(subtitles):
            return False  # two titles that go on differently
        shared_author = self._share_author(first, second, cited, other_cited, link.cited_names)
        if shared_author or link.evidence == "author" or year_gap is None:
            return shared_author
        if link.evidence == "citation" and any(subtitles):
            return False  # a subtitle needs a shared author
        if all(subtitles) and _differ(link.extra, link.other_extra):
            return False  # so do subtitles that differ in content words
        listed = (first.surnames or self._name_words.intersection(cited)) and (
            second.surnames or self._name_words.intersection(other_cited)
        )
        if link.evidence == "citation":
            return not listed
        return year_gap == 0 or not listed

    def _cites(self, extra: tuple[str, ...], other: _Evidence, names: frozenset[str]) -> bool:
        """Whether words after a title are a citation of the other group's paper: they show a
        year, or one of their first words that are neither stop words nor initials is a name
        both titles' citations show, a word of the other group's venue or a surname it lists,
        or they show two of its surnames. Words merely seen in some author or venue field of
        the index are no evidence: titles are made of them too."""
        if any(map(is_year, extra)):
            return True
        start = _citation_start(extra)
        if any(word in names or word in other.venue_words for word in _leading(start)):
            return True
        if not other.surnames:
            return False
        # A cited name may be split ("h a rder") where the other's author field has it whole.
        named = _named(_spellings(extra), other.surnames)
        return len(named) >= 2 or bool(named and _named(_spellings(start), named))

    def _share_author(
        self,
        first: _Evidence,
        second: _Evidence,
        cited: tuple[str, ...],
        other_cited: tuple[str, ...],
        cited_names: frozenset[str],
    ) -> bool:
        """Whether two groups name a common author: in their author fields, in both citations
        around their titles (unless both list authors in their fields), or a word of one's
        citation that matches a surname the other lists."""
        if not first.surnames.isdisjoint(second.surnames) or _named(
            first.surnames, second.surnames
        ):
            return True
        if cited_names and not (first.surnames and second.surnames):
            return True
        return bool(
            _named(_spellings(cited), second.surnames)
            or _named(_spellings(other_cited), first.surnames)
        )

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
        kept, moved = self._evidence.pop(root), self._evidence.pop(child)
        if kept.size() < moved.size():
            kept, moved = moved, kept
        kept.absorb(moved)
        self._evidence[root] = kept
        self._parent[child] = root
        if self._sides and (sides := self._sides.pop(child, 0) | self._sides.get(root, 0)):
            self._sides[root] = sides


def _fold(text: str) -> str:
    """Lower-case text with HTML entities decoded and accents dropped (NFKD)."""
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


_NONE: frozenset[str] = frozenset()


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


@lru_cache(maxsize=1 << 12)
def _venue_words(venue: str) -> frozenset[str]:
    """A venue's folded words but stop words; few venues name many records."""
    return frozenset(fold_name(venue).split()) - _STOPWORDS


def _qualifier(normalized_title: str) -> tuple[str, frozenset[str]]:
    notice = _NOTICE.match(normalized_title)
    parts = frozenset(_PART.findall(normalized_title))
    return (notice.group(0) if notice else "", parts)


def _block_keys(words: tuple[str, ...]) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Keys of a title's word blocks (near duplicates) and edge blocks (subtitle variants)."""
    content = [w for w in words if w not in _STOPWORDS] or list(words)
    longest = sorted(sorted(set(content)), key=len, reverse=True)[:_BLOCK_WORDS]
    word_keys: list[tuple[str, ...]] = list(combinations(sorted(longest), 2))
    # Two-word titles lose their only pair to one typo, so they also block on single words.
    if len(longest) <= 2:
        word_keys.extend((word,) for word in longest)
    # The content words run together find the same title with words run together or split.
    joined = "".join(content)
    edge_keys = [("<", joined[:_JOINED_KEY_LENGTH]), (">", joined[-_JOINED_KEY_LENGTH:])]
    if len(content) >= _MIN_CONTAINED_WORDS:
        edge_keys += [("^", *content[:_EDGE_WORDS]), ("$", *content[-_EDGE_WORDS:])]
    return word_keys, edge_keys


def _spellings(words: tuple[str, ...]) -> set[str]:
    """The words, and each two or three next to each other run together."""
    return set(words) | _runs(words)


def _runs(words: tuple[str, ...]) -> set[str]:
    """Each two or three words next to each other run together: a cited name may be split
    ("Ö zsu", "Galindo-Legaria") where an author field has it whole."""
    runs = (words[i : i + size] for size in (2, 3) for i in range(len(words) - size + 1))
    return set(map("".join, runs))


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


def _is_initial(word: str) -> bool:
    return len(word) == 1 and word.isalpha()


def _leading(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words that are neither stop words nor initials: where a citation shows its names
    ("j widom"), venue or year."""
    return tuple(word for word in words if word not in _STOPWORDS and not _is_initial(word))


def _citation_start(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words up to the first three that are neither stop words nor initials."""
    seen = 0
    for end, word in enumerate(words):
        if word not in _STOPWORDS and not _is_initial(word):
            seen += 1
            if seen == _CITATION_START:
                return words[: end + 1]
    return words


def _own_words(extra: tuple[str, ...], other_extra: tuple[str, ...]) -> set[str]:
    """Content words of one title's extra words that the other's lack (neither show, nor run
    together, nor spell with a typo), but for initials and years: where two subtitles, or two
    citations, differ."""
    spelled = _spellings(other_extra)
    return {
        word
        for word in _leading(extra)
        if not is_year(word)
        and word not in spelled
        and not any(one_letter_apart(word, other) for other in other_extra)
    }


def _differ(extra: tuple[str, ...], other_extra: tuple[str, ...]) -> bool:
    """Whether each of two subtitles has content words of its own."""
    return bool(_own_words(extra, other_extra)) and bool(_own_words(other_extra, extra))


def titles_could_link(words: tuple[str, ...], other_words: tuple[str, ...]) -> bool:
    """Whether the index could link a title (its words) with an earlier one it is not
    TITLE_THRESHOLD similar to, whatever author and venue words it knows (``_link``): they
    agree from the start on all their words, or on a start of at least
    ``_MIN_CONTAINED_WORDS`` content words that is not generic, or one ends the other."""
    if words[0][0] == other_words[0][0]:
        i, j = align_start(words, other_words)
        if i == len(words) and j == len(other_words):
            return True
        start = words[:i]
        if _content_words(start) >= _MIN_CONTAINED_WORDS and not is_generic_title(" ".join(start)):
            return True
    return _ends_other(words, other_words)


def _ends_other(words: tuple[str, ...], other_words: tuple[str, ...]) -> bool:
    """Whether one title ends the other, a subtitle (or label) before it."""
    short, long = sorted((words, other_words), key=len)
    if short[-1] != long[-1] or len(short) == len(long):
        return False
    if _content_words(short) < _MIN_CONTAINED_WORDS:
        return False
    return long[-len(short) :] == short


def _content_words(words: tuple[str, ...]) -> int:
    return sum(word not in _STOPWORDS for word in words)


def _identifier_keys(record: PaperRecord) -> tuple[tuple[str, str], ...]:
    if not (record.doi or record.arxiv_id or record.pmid):
        return ()
    return _normalized_identifiers(record.doi, record.arxiv_id, record.pmid)


# A record's identifiers are read again at each step of a save (the crawl's index, its paper, the
# store's index); their normalisation is a few regular expressions. Sized by the batch benchmark:
# 65,536 entries grew a 10,000-query batch's process by ~30 MB; 4,096 missed so often that CPU
# per request rose by a fifth.
@lru_cache(maxsize=1 << 13)
def _normalized_identifiers(
    raw_doi: str | None, raw_arxiv_id: str | None, raw_pmid: str | None
) -> tuple[tuple[str, str], ...]:
    keys: list[tuple[str, str]] = []
    doi = normalize_doi(raw_doi)
    arxiv_from_doi = arxiv_id_from_doi(doi)
    if doi and not arxiv_from_doi:
        keys.append(("doi", doi))
    # The arXiv DataCite DOI and the arXiv id name the same preprint.
    for arxiv_id in {normalize_arxiv_id(raw_arxiv_id), arxiv_from_doi} - {None}:
        keys.append(("arxiv", arxiv_id))
    pmid = normalize_pmid(raw_pmid)
    if pmid:
        keys.append(("pmid", pmid))
    return tuple(keys)


def _canonical_paper(
    key: int, records: list[PaperRecord], normalized: Mapping[str, str]
) -> CanonicalPaper:
    """One paper from its records (`normalized`: their titles normalised, as the index has
    them)."""
    api = [r for r in records if r.kind == "api"]
    serp = [r for r in records if r.kind != "api"]
    ranked = api + serp  # API metadata beats what a SERP snippet shows
    dois = [d for d in (normalize_doi(r.doi) for r in ranked) if d]
    journal_dois = [d for d in dois if not d.startswith(ARXIV_DOI_PREFIX)]
    arxiv_ids = [normalize_arxiv_id(r.arxiv_id) or arxiv_id_from_doi(r.doi) for r in ranked]
    title = next((r.title for r in ranked if r.title.strip()), records[0].title)
    abstracts = [r.abstract for r in api if r.abstract] or [r.abstract for r in serp if r.abstract]
    kinds = {r.kind for r in records}
    attribution: Attribution = (
        "both" if len(kinds) == 2 else "api_only" if "api" in kinds else "serp_only"
    )
    return CanonicalPaper(
        key=key,
        records=records,
        doi=next(iter(journal_dois or dois), None),
        arxiv_id=next((a for a in arxiv_ids if a), None),
        pmid=next((p for p in (normalize_pmid(r.pmid) for r in ranked) if p), None),
        title=title,
        normalized_title=normalized.get(title) or normalize_title(title),
        year=next((r.year for r in ranked if r.year is not None), None),
        authors=next((r.authors for r in ranked if r.authors), ()),
        venue=next((r.venue for r in ranked if r.venue), None),
        abstract=max(abstracts, key=len, default=None),
        sources={r.source for r in records},
        attribution=attribution,
    )
