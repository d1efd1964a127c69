"""CanonicalPaperIndex: merge records of the same paper from SERP engines and scholarly APIs.

Pure logic, no Scrapy imports. Two records are the same paper when

* they share a DOI, an arXiv id or a PMID — transitively, so a Semantic Scholar record carrying
  both a journal DOI and an arXiv id joins the journal version and the preprint; or
* their normalised titles (see ``normalize_title``) score ``fuzz.ratio >= title_threshold`` and
  a second signal agrees: a year within ``year_tolerance`` or a shared author surname; or
* one normalised title is the other plus a subtitle ("X" vs "X: how to Y") and both signals
  agree: a year within tolerance and a shared author surname.

Title merges are refused when the titles are generic ("Editorial", "Book reviews", …), when one
is a notice about the other ("Erratum: X") or a different part ("X, part II"), when both papers
carry identifiers of one kind that disagree (two different DOIs), and when both carry years
further apart than the tolerance — a paper and its journal version years later stay two papers
unless an identifier links them.

Evidence (years, surnames, identifiers) is kept per canonical paper, a union-find group, so a
SERP record without authors can join through the year of an API record already in the group.
Title scoring is blocked: each distinct title is scored, in one rapidfuzz call, only against
earlier titles that share a pair of its longest words or its first or last words, and blocks of
common words stop growing, which keeps the cost per record flat as the index grows.
"""

from __future__ import annotations

import gc
import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

from rapidfuzz import fuzz, process

from lyra_crawl.papers.identifiers import (
    ARXIV_DOI_PREFIX,
    arxiv_id_from_doi,
    normalize_arxiv_id,
    normalize_doi,
    normalize_pmid,
)
from lyra_crawl.results import ResultFields, ResultKind

__all__ = [
    "Attribution",
    "CanonicalPaper",
    "CanonicalPaperIndex",
    "PaperRecord",
    "RecordKind",
    "identifier_keys",
    "is_generic_title",
    "normalize_title",
    "title_block_keys",
]

Attribution = Literal["both", "api_only", "serp_only"]
RecordKind = ResultKind


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

_STOPWORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "of", "on", "or"}
    | {"over", "the", "to", "towards", "toward", "under", "using", "via", "with", "without"}
)
# Notices about a paper are other items than the paper: "Erratum: X" never merges with "X".
_NOTICE = re.compile(
    r"^(?:errat(?:a|um)|corrigend(?:a|um)|addendum|correction|retraction|expression of concern"
    r"|comments? on|reply to|response to|rebuttal)\b"
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
_BLOCK_LIMIT = 32
# The shorter title needs this many content words for a subtitle match ("XML" is no evidence).
_MIN_CONTAINED_WORDS = 3
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})


def normalize_title(title: str) -> str:
    """Title for comparison: entities decoded, NFKD without accents, lower-case, venue labels
    such as "(tutorial)" removed, punctuation to spaces, whitespace folded."""
    text = _fold(title)
    for pattern in _NOISE_LABELS if _LABEL_WORD.search(text) else ():
        stripped = pattern.sub("", text)
        if _NON_WORD.sub("", stripped):  # a title that is only a label ("Panel") stays whole
            text = stripped
    return " ".join(_NON_WORD.sub(" ", text).split())


def is_generic_title(normalized: str) -> bool:
    """Whether a normalised title names front matter or a column rather than one paper."""
    return _GENERIC_TITLE.fullmatch(normalized) is not None


def title_block_keys(normalized_title: str) -> list[str]:
    """The blocking keys of a normalised title, as text: a title is compared only with titles
    sharing one of them (the index's own blocking, for a store's index of stored titles)."""
    word_keys, edge_keys = _block_keys(tuple(normalized_title.split()))
    return [" ".join(key) for key in (*word_keys, *edge_keys)]


def identifier_keys(record: PaperRecord) -> list[tuple[str, str]]:
    """The record's identifiers as the index joins them: (doi|arxiv|pmid, normalised value)."""
    return _identifier_keys(record)


@dataclass(slots=True)
class _Evidence:
    """What a group of merged records knows, for deciding title merges with other groups."""

    years: set[int]
    surnames: set[str]
    ids: dict[str, set[str]]

    def absorb(self, other: _Evidence) -> None:
        self.years |= other.years
        self.surnames |= other.surnames
        for kind, values in other.ids.items():
            self.ids.setdefault(kind, set()).update(values)

    def size(self) -> int:
        return len(self.years) + len(self.surnames) + sum(map(len, self.ids.values()))


@dataclass(slots=True)
class _Prepared:
    normalized_title: str
    generic: bool
    id_keys: list[tuple[str, str]]
    evidence: _Evidence


@dataclass(slots=True)
class _Title:
    """One distinct normalised title and the earlier titles it may merge with."""

    text: str
    words: tuple[str, ...]
    qualifier: tuple[str, frozenset[str]]  # notice kind and part numbers; must be equal to merge
    groups: list[int] = field(default_factory=list)  # one record per paper seen with this title
    similar: list[int] = field(default_factory=list)  # ratio >= threshold, itself included
    subtitled: list[int] = field(default_factory=list)  # one title is the other plus a subtitle


class CanonicalPaperIndex:
    """Incremental index that groups records into canonical papers.

    Keys are record indices (the order of ``add``/``add_many``): a paper's key is the index of
    its first record, so a key can change to a smaller one when a later record joins two papers.
    """

    def __init__(self, *, title_threshold: float = 90.0, year_tolerance: int = 1) -> None:
        self.title_threshold = title_threshold
        self.year_tolerance = year_tolerance
        self._records: list[PaperRecord] = []
        self._parent: list[int] = []
        self._evidence: dict[int, _Evidence] = {}
        self._by_identifier: dict[tuple[str, str], int] = {}
        self._title_ids: dict[str, int] = {}
        self._titles: list[_Title] = []
        self._blocks: dict[tuple[str, ...], list[int]] = {}

    def add(self, record: PaperRecord) -> int:
        """Add one record and return the key of the canonical paper it belongs to."""
        return self._add(record, self._prepare(record, normalize_title(record.title)))

    def add_group(self, records: Iterable[PaperRecord]) -> int:
        """Add records already known to be one paper (a stored paper's) as one group, whatever
        the rules say of them; the rules merge the group with other papers. Returns its key."""
        keys = self.add_many(records)
        for key in keys[1:]:
            self._union(keys[0], key)
        return self._find(keys[0])

    def add_many(self, records: Iterable[PaperRecord]) -> list[int]:
        """Add records in order (same result as repeated ``add``); return each one's final key.

        Each distinct raw title is normalised once, and each distinct normalised title is
        scored once, against its whole block in a single rapidfuzz call.
        """
        normalized: dict[str, str] = {}
        indices = []
        # The batch allocates many small containers and no reference cycles; left on, the cyclic
        # garbage collector rescans the whole growing index again and again (~40 % of the time).
        collecting = gc.isenabled()
        gc.disable()
        try:
            for record in records:
                title = normalized.get(record.title)
                if title is None:
                    title = normalized[record.title] = normalize_title(record.title)
                self._add(record, self._prepare(record, title))
                indices.append(len(self._records) - 1)
        finally:
            if collecting:
                gc.enable()
        return [self._find(index) for index in indices]

    def key_of(self, record_index: int) -> int:
        """Current canonical key of the record added at ``record_index``."""
        return self._find(record_index)

    def papers(self) -> list[CanonicalPaper]:
        """All canonical papers, ordered by key."""
        groups: dict[int, list[PaperRecord]] = {}
        for index, record in enumerate(self._records):
            groups.setdefault(self._find(index), []).append(record)
        return [_canonical_paper(key, records) for key, records in sorted(groups.items())]

    def __len__(self) -> int:
        return len(self._records)

    def _prepare(self, record: PaperRecord, normalized_title: str) -> _Prepared:
        id_keys = _identifier_keys(record)
        ids: dict[str, set[str]] = {}
        for kind, value in id_keys:
            ids.setdefault(kind, set()).add(value)
        surnames = {name for name in map(_surname, record.authors) if name}
        years = {record.year} if record.year is not None else set()
        return _Prepared(
            normalized_title=normalized_title,
            generic=is_generic_title(normalized_title),
            id_keys=id_keys,
            evidence=_Evidence(years=years, surnames=surnames, ids=ids),
        )

    def _add(self, record: PaperRecord, prepared: _Prepared) -> int:
        index = len(self._records)
        self._records.append(record)
        self._parent.append(index)
        self._evidence[index] = prepared.evidence
        for key in prepared.id_keys:
            first = self._by_identifier.setdefault(key, index)
            if first != index:
                self._union(index, first)
        if prepared.normalized_title and not prepared.generic:
            self._merge_by_title(index, prepared.normalized_title)
        return self._find(index)

    def _merge_by_title(self, index: int, normalized_title: str) -> None:
        title = self._titles[self._title_id(normalized_title)]
        for neighbours, strict in ((title.similar, False), (title.subtitled, True)):
            for neighbour_id in neighbours:
                neighbour = self._titles[neighbour_id]
                # Evidence lives on groups, so one record per group is enough; compacting here
                # keeps the list as short as the number of distinct papers with that title.
                neighbour.groups = list(dict.fromkeys(map(self._find, neighbour.groups)))
                for member in neighbour.groups:
                    own, other = self._find(index), self._find(member)
                    if own != other and self._corroborated(own, other, strict=strict):
                        self._union(own, other)
        title.groups.append(index)

    def _title_id(self, normalized_title: str) -> int:
        """Id of a distinct title; a new title is scored against the earlier ones it blocks with."""
        title_id = self._title_ids.get(normalized_title)
        if title_id is not None:
            return title_id
        title_id = len(self._titles)
        words = tuple(normalized_title.split())
        title = _Title(normalized_title, words, _qualifier(normalized_title), similar=[title_id])
        self._title_ids[normalized_title] = title_id
        self._titles.append(title)
        word_keys, edge_keys = _block_keys(words)
        # A full block is made of common words and would compare this title with a share of the
        # index; the title's rarer keys find its near duplicates instead.
        word_blocks = [self._blocks.setdefault(key, []) for key in word_keys]
        edge_blocks = [self._blocks.setdefault(key, []) for key in edge_keys]
        candidates = self._candidates(word_blocks + edge_blocks, title.qualifier)
        if candidates:
            matches = process.extract(
                normalized_title,
                [self._titles[c].text for c in candidates],
                scorer=fuzz.ratio,
                processor=None,
                score_cutoff=self.title_threshold,
                limit=None,
            )
            similar = {candidates[position] for _, _, position in matches}
            title.similar.extend(similar)
            # The same title with a subtitle added or dropped shares its first or last words.
            subtitled = {
                other
                for other in self._candidates(edge_blocks, title.qualifier)
                if other not in similar and _is_subtitle_variant(words, self._titles[other].words)
            }
            title.subtitled.extend(subtitled)
            for other in similar:
                self._titles[other].similar.append(title_id)
            for other in subtitled:
                self._titles[other].subtitled.append(title_id)
        for block in word_blocks + edge_blocks:
            if len(block) < _BLOCK_LIMIT:
                block.append(title_id)
        return title_id

    def _candidates(
        self, blocks: list[list[int]], qualifier: tuple[str, frozenset[str]]
    ) -> list[int]:
        """Distinct titles in blocks that are not full, with the same qualifier."""
        seen = dict.fromkeys(c for block in blocks if len(block) < _BLOCK_LIMIT for c in block)
        return [c for c in seen if self._titles[c].qualifier == qualifier]

    def _corroborated(self, a: int, b: int, *, strict: bool) -> bool:
        """Whether two groups with matching titles are one paper by their other evidence.

        Identifiers of one kind that disagree, or years further apart than the tolerance, keep
        them apart. Otherwise a year within tolerance or a shared author surname is enough for
        similar titles; a title match with a subtitle added (``strict``) needs both.
        """
        first, second = self._evidence[a], self._evidence[b]
        for kind in first.ids.keys() & second.ids.keys():
            if first.ids[kind].isdisjoint(second.ids[kind]):
                return False
        year_gap = min((abs(x - y) for x in first.years for y in second.years), default=None)
        if year_gap is not None and year_gap > self.year_tolerance:
            return False
        same_authors = not first.surnames.isdisjoint(second.surnames)
        if strict:
            return same_authors and year_gap is not None
        return same_authors or year_gap is not None

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


def _fold(text: str) -> str:
    """Lower-case text with HTML entities decoded and accents dropped (NFKD)."""
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


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
    if len(content) < _MIN_CONTAINED_WORDS:
        return word_keys, []
    return word_keys, [("^", *content[:_EDGE_WORDS]), ("$", *content[-_EDGE_WORDS:])]


def _is_subtitle_variant(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether the shorter title is the longer one's start or end ("X" vs "X: how to Y")."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) == len(long):
        return False
    return long[: len(short)] == short or long[-len(short) :] == short


def _surname(author: str) -> str | None:
    """Lower-case ASCII surname from "Given Family", "Family, Given" or "Family GA" (PubMed)."""
    if "," in author:
        family = author.split(",", 1)[0]
    else:
        parts = [p for p in author.split() if p.strip(".").lower() not in _NAME_SUFFIXES]
        if not parts:
            return None
        initials = len(parts) > 1 and parts[-1].isupper() and len(parts[-1].strip(".")) <= 3
        family = parts[0] if initials else parts[-1]
    if family.isascii() and family.isalpha():
        return family.lower()
    return _NON_WORD.sub("", _fold(family)) or None


def _identifier_keys(record: PaperRecord) -> list[tuple[str, str]]:
    keys: list[tuple[str, str]] = []
    doi = normalize_doi(record.doi)
    arxiv_from_doi = arxiv_id_from_doi(doi)
    if doi and not arxiv_from_doi:
        keys.append(("doi", doi))
    # The arXiv DataCite DOI and the arXiv id name the same preprint.
    for arxiv_id in {normalize_arxiv_id(record.arxiv_id), arxiv_from_doi} - {None}:
        keys.append(("arxiv", arxiv_id))
    pmid = normalize_pmid(record.pmid)
    if pmid:
        keys.append(("pmid", pmid))
    return keys


def _canonical_paper(key: int, records: list[PaperRecord]) -> CanonicalPaper:
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
        normalized_title=normalize_title(title),
        year=next((r.year for r in ranked if r.year is not None), None),
        authors=next((r.authors for r in ranked if r.authors), ()),
        venue=next((r.venue for r in ranked if r.venue), None),
        abstract=max(abstracts, key=len, default=None),
        sources={r.source for r in records},
        attribution=attribution,
    )
