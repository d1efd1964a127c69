"""The one paper index across queries, as a store keeps it: blocks, candidates, matching. Pure.

A query's papers are merged with each other by the crawl (papers.collector); at the query's
close each one is merged with the papers already stored, so that one paper is one row however
many queries and crawls found it:

* A stored paper keeps what the merge rules read of the records it was merged from (its kept
  records: title, year, authors and identifiers of each, at most `RECORDS_KEPT` distinct ones).
  In memory a record is compared with every title of a group and against the group's years,
  surnames and identifiers together; a stored paper is that group again.
* A stored paper is found through its blocks: one per identifier of its records
  (`doi:10.1/x`, `arxiv:…`, `pmid:…`) and the keys of each of their titles
  (`canonical.title_block_keys`, the in-memory index's own blocking). A title block holds at
  most `BLOCK_LIMIT` papers: once full it stops growing and is no longer read, as the in-memory
  index's blocks do, because it is made of common words and would compare each new paper with
  an ever larger share of the store.
* Matching (`QueryPaper.matches`) runs canonical.py's rules as they are. A stored paper sharing
  an identifier with the paper is the paper (the rules join shared identifiers whatever else
  the records say). Any other candidate whose title is close to one of the paper's at the
  character level is judged with the paper alone: its kept records enter a fresh
  CanonicalPaperIndex as one group, then the paper's records as another, and it is the paper
  when the rules join the two. Two stored papers never join each other except through the
  paper itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from rapidfuzz import fuzz, process

from lyra_crawl.papers.canonical import (
    CanonicalPaper,
    CanonicalPaperIndex,
    PaperRecord,
    identifier_keys,
    is_generic_title,
    normalize_title,
    title_block_keys,
)

__all__ = [
    "BLOCK_LIMIT",
    "CLOSE_TITLE_SCORE",
    "RECORDS_KEPT",
    "KeptRecord",
    "QueryPaper",
    "StoredCandidate",
    "block_entries",
    "compact_titles",
    "kept_record",
    "merge_kept",
    "title_keys",
]

BLOCK_LIMIT = 32
RECORDS_KEPT = 16
# Below the index's own title threshold (ratio 90), so no pair the rules could accept is missed.
CLOSE_TITLE_SCORE = 80
# A save normalises the same titles again and again (a paper's, its candidates').
_normalized = lru_cache(maxsize=1 << 16)(normalize_title)

KeptRecord = dict[str, Any]


def kept_record(record: PaperRecord) -> KeptRecord:
    """What the merge rules read of a record, as JSON (empty fields left out)."""
    found = {
        "title": record.title,
        "year": record.year,
        "authors": list(record.authors),
        "doi": record.doi,
        "arxiv_id": record.arxiv_id,
        "pmid": record.pmid,
    }
    return {name: value for name, value in found.items() if value}


def merge_kept(*known: Iterable[Mapping[str, Any]]) -> list[KeptRecord]:
    """Lists of kept records as one: the distinct ones in order, at most RECORDS_KEPT."""
    kept: dict[tuple[Any, ...], KeptRecord] = {}
    for values in (values for records in known for values in records):
        get = values.get
        key = (
            get("title"),
            get("year"),
            tuple(get("authors", ())),
            get("doi"),
            get("arxiv_id"),
            get("pmid"),
        )
        kept.setdefault(key, dict(values))
        if len(kept) == RECORDS_KEPT:
            break
    return list(kept.values())


def compact_titles(kept: Iterable[Mapping[str, Any]]) -> list[str]:
    """The distinct titles of kept records, normalised, spaces removed (cheap to compare)."""
    return list(dict.fromkeys(_compact(values.get("title", "")) for values in kept))


def title_keys(title: str) -> list[str]:
    """The blocking keys of one raw title; none for a generic title, which never merges by it."""
    normalized = _normalized(title)
    if not normalized or is_generic_title(normalized):
        return []
    return title_block_keys(normalized)


@dataclass
class StoredCandidate:
    """A stored paper as matching sees it, from its kept records."""

    id: int
    kept: Sequence[Mapping[str, Any]]

    @cached_property
    def compact_titles(self) -> str:
        """Its distinct compact titles, one a line."""
        return "\n".join(compact_titles(self.kept))

    @property
    def block_keys(self) -> set[str]:
        """The blocks it is in: its records' identifiers and the keys of their titles."""
        return _identifier_block_keys(self.records) | {
            key for values in self.kept for key in title_keys(values.get("title", ""))
        }

    @cached_property
    def records(self) -> list[PaperRecord]:
        return [
            PaperRecord(
                source="index",
                title=values.get("title", ""),
                year=values.get("year"),
                authors=tuple(values.get("authors", ())),
                doi=values.get("doi"),
                arxiv_id=values.get("arxiv_id"),
                pmid=values.get("pmid"),
            )
            for values in self.kept
        ]


@dataclass
class QueryPaper:
    """A query's canonical paper on its way into the stored index."""

    paper: CanonicalPaper
    # Its merged metadata as one record, then its own records.
    records: list[PaperRecord] = field(init=False)

    def __post_init__(self) -> None:
        paper = self.paper
        summary = PaperRecord(
            source="query",
            title=paper.title,
            year=paper.year,
            authors=paper.authors,
            doi=paper.doi,
            arxiv_id=paper.arxiv_id,
            pmid=paper.pmid,
        )
        self.records = [summary, *paper.records]

    @cached_property
    def kept(self) -> list[KeptRecord]:
        """Its records as a stored paper keeps them."""
        return merge_kept(map(kept_record, self.records))

    @cached_property
    def identifier_keys(self) -> frozenset[str]:
        return frozenset(_identifier_block_keys(self.records))

    @cached_property
    def title_keys(self) -> frozenset[str]:
        titles = {record.title for record in self.records}
        return frozenset(key for title in titles for key in title_keys(title))

    @property
    def block_keys(self) -> frozenset[str]:
        """The blocks it is found in, and finds its candidates in."""
        return self.identifier_keys | self.title_keys

    def sharing_identifiers(self, blocks: Mapping[str, Sequence[int]]) -> set[int]:
        """The stored papers in its identifiers' blocks."""
        return {member for key in self.identifier_keys for member in blocks.get(key, ())}

    def title_candidates(self, blocks: Mapping[str, Sequence[int]]) -> set[int]:
        """The stored papers in its title blocks that are not full."""
        return {
            member
            for key in self.title_keys
            if len(block := blocks.get(key, ())) < BLOCK_LIMIT
            for member in block
        }

    @cached_property
    def compact_titles(self) -> list[str]:
        return list(dict.fromkeys(_compact(record.title) for record in self.records))

    def close_titles(self, candidates: Mapping[int, str]) -> set[int]:
        """The candidates (id -> compact titles, one a line) with a title close to one of the
        paper's at the character level: two compact titles (normalised, spaces removed) score
        at least CLOSE_TITLE_SCORE by rapidfuzz's ratio (near duplicates, words run together)
        or partial_ratio (one title in the other: a subtitle or a citation fragment added).

        A superset of what the title rules accept (ratio >= 90 on the spaced titles, or one
        title the other's start or end), cheap to find: C loops over the candidates' titles.
        """
        owners: list[int] = []
        choices: list[str] = []
        for paper_id, titles in candidates.items():
            for title in titles.split("\n"):
                owners.append(paper_id)
                choices.append(title)
        close: set[int] = set()
        for title in self.compact_titles:
            for scorer in (fuzz.ratio, fuzz.partial_ratio):
                close.update(
                    owners[position]
                    for _, _, position in process.extract(
                        title,
                        choices,
                        scorer=scorer,
                        processor=None,
                        score_cutoff=CLOSE_TITLE_SCORE,
                        limit=None,
                    )
                )
        return close

    def matches(self, candidates: Sequence[StoredCandidate]) -> list[int]:
        """Ids of the title candidates the rules join with this paper, each judged with the
        paper alone; only those with a close title (`close_titles`) are judged."""
        close = self.close_titles({c.id: c.compact_titles for c in candidates})
        return sorted(c.id for c in candidates if c.id in close and self._joins(c))

    def _joins(self, candidate: StoredCandidate) -> bool:
        index = CanonicalPaperIndex()
        index.add_group(candidate.records)
        index.add_group(self.records)
        return index.key_of(0) == index.key_of(len(candidate.records))


def block_entries(
    blocks: Mapping[str, Sequence[int]], keyed: Iterable[tuple[int, Iterable[str]]]
) -> list[tuple[str, int]]:
    """The block memberships (key, paper id) to add: each paper enters the blocks of its keys,
    title blocks while they are not full. `blocks`: those blocks as stored (a key no paper has
    yet is absent)."""
    sizes: dict[str, int] = {}
    entries: dict[tuple[str, int], None] = {}
    for paper_id, keys in keyed:
        for key in keys:
            members = blocks.get(key, ())
            if paper_id in members or (key, paper_id) in entries:
                continue
            size = sizes.get(key, len(members))
            # An identifier's block is never full: a paper sharing one is always the paper.
            if size < BLOCK_LIMIT or _is_identifier_key(key):
                entries[(key, paper_id)] = None
                sizes[key] = size + 1
    return list(entries)


def _identifier_block_keys(records: Iterable[PaperRecord]) -> set[str]:
    """Block keys of records' identifiers ("doi:10.1/x"), which cannot meet a title's: the words
    of a normalised title have no colon."""
    return {f"{kind}:{value}" for record in records for kind, value in identifier_keys(record)}


def _is_identifier_key(key: str) -> bool:
    return ":" in key


def _compact(title: str) -> str:
    return _normalized(title).replace(" ", "")
