"""The one paper index across queries, as a store keeps it: blocks, candidates, matching. Pure.

A query's papers are merged with each other by the crawl (papers.collector); at the query's
close they are merged with the papers already stored, so that one paper is one row however
many queries and crawls found it:

* A stored paper keeps what the merge rules read of the records it was merged from (its kept
  records: title, year, authors, venue and identifiers of each, at most `RECORDS_KEPT`
  distinct ones). In memory a record is compared with every title of a group and against the
  group's years, surnames, venues and identifiers together; a stored paper is that group again.
* A stored paper is found through its blocks: one per identifier of its records
  (`doi:10.1/x`, `arxiv:…`, `pmid:…`) and the keys of each of their titles
  (`blocking.title_block_keys`, the in-memory index's own blocking: word keys and edge keys).
  A title block holds at most `BLOCK_LIMIT` papers: once full it stops growing and is no
  longer read, as the in-memory index's blocks do, because it is made of common words and
  would compare each new paper with an ever larger share of the store.
  Blocks rather than the database's own text index (benchmarks/bench_text_index.py: a query
  title's candidates among 70,000 stored synthetic titles): the blocks' read takes 0.09 ms a
  title, SQLite's FTS5 0.29 ms with word tokens and 4.8 ms with the trigram tokenizer (each
  word key asked, the block limit as LIMIT), PostgreSQL's pg_trgm 3.3 ms by LIKE per key and
  29 ms by similarity (GIN, threshold 0.5): a paper's block keys are exact lookups, and a
  trigram's posting list holds a large share of the titles.
* A paper's candidates (`QueryPaper.candidates`) are the stored papers the in-memory index
  could link it with: those sharing an identifier with it; those in its word or edge blocks
  with a title similar to one of its own (`title_links.similar_titles`; the index scores every
  title of its blocks); and those in its edge blocks whose title the index could link with one
  of its own whatever the score (`title_links.titles_could_link`: a long common start, or one
  title ending the other). A superset of what the rules join, computed from titles alone.
* Matching (`match_papers`) runs the canonical index as it is (its title links and its matcher,
  `papers.matcher`), in ONE CanonicalPaperIndex per save: the candidates, each one group of its
  kept records ("stored" side), then the query's papers that have candidates, each one group
  ("new" side). The index knows the words of the author and venue fields of every stored record
  and of the query's (`KnownWords`), so a citation around a title reads as it would in memory.
  Groups of one side never join each other by the rules: two stored papers join only through a
  query's paper, and the query's papers, merged with each other by the crawl, are not merged
  again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from lyra_crawl.papers.assembly import CanonicalPaper
from lyra_crawl.papers.blocking import BLOCK_LIMIT, title_block_keys
from lyra_crawl.papers.canonical import CanonicalPaperIndex
from lyra_crawl.papers.identifiers import identifier_keys
from lyra_crawl.papers.records import PaperRecord
from lyra_crawl.papers.title_links import cited_words, similar_titles, titles_could_link
from lyra_crawl.papers.title_normalization import is_generic_title, normalize_title

__all__ = [
    "RECORDS_KEPT",
    "Blocks",
    "KeptRecord",
    "KnownWords",
    "Match",
    "Members",
    "QueryPaper",
    "block_entries",
    "is_identifier_key",
    "joinable",
    "kept_paper_records",
    "kept_record",
    "kept_titles",
    "known_words",
    "match_papers",
    "merge_kept",
    "stored_block_keys",
]

RECORDS_KEPT = 16
# A save normalises the same titles again and again (a paper's, its candidates').
_normalized = lru_cache(maxsize=1 << 16)(normalize_title)

KeptRecord = dict[str, Any]
# Stored blocks by key: their papers' ids, or None for a full title block (no longer read).
Blocks = Mapping[str, Sequence[int] | None]


def kept_record(record: PaperRecord) -> KeptRecord:
    """What the merge rules read of a record, as JSON (empty fields left out)."""
    found = {
        "title": record.title,
        "year": record.year,
        "authors": list(record.authors),
        "venue": record.venue,
        "doi": record.doi,
        "arxiv_id": record.arxiv_id,
        "pmid": record.pmid,
    }
    return {name: value for name, value in found.items() if value}


def merge_kept(*known: Iterable[Mapping[str, Any]]) -> list[KeptRecord]:
    """Lists of kept records as one: the distinct ones in order, at most RECORDS_KEPT."""
    kept: dict[tuple[Any, ...], KeptRecord] = {}
    for records in known:
        for values in records:
            get = values.get
            key = (
                get("title"),
                get("year"),
                tuple(get("authors", ())),
                get("venue"),
                get("doi"),
                get("arxiv_id"),
                get("pmid"),
            )
            if key not in kept:
                kept[key] = dict(values)
                if len(kept) == RECORDS_KEPT:
                    return list(kept.values())
    return list(kept.values())


def kept_titles(kept: Iterable[Mapping[str, Any]]) -> list[str]:
    """The distinct normalised titles of kept records (what the store keeps to read first)."""
    titles = dict.fromkeys(_normalized(values.get("title", "")) for values in kept)
    return [title for title in titles if title]


def kept_paper_records(kept: Iterable[Mapping[str, Any]]) -> list[PaperRecord]:
    """Kept records as the records the index reads."""
    return [
        PaperRecord(
            source="index",
            title=values.get("title", ""),
            year=values.get("year"),
            authors=tuple(values.get("authors", ())),
            venue=values.get("venue"),
            doi=values.get("doi"),
            arxiv_id=values.get("arxiv_id"),
            pmid=values.get("pmid"),
        )
        for values in kept
    ]


def stored_block_keys(kept: Sequence[Mapping[str, Any]]) -> set[str]:
    """The blocks a stored paper is in: its records' identifiers and the keys of their titles."""
    keys = _identifier_block_keys(kept_paper_records(kept))
    for title in kept_titles(kept):
        word_keys, edge_keys = _title_keys(title)
        keys.update(word_keys, edge_keys)
    return keys


@dataclass(frozen=True)
class KnownWords:
    """Words of the author and venue fields of records (title_links.cited_words)."""

    names: frozenset[str] = frozenset()
    venues: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Members:
    """The stored papers in a query's paper's blocks: its identifiers' (`sharing`), its edge
    blocks' and its word blocks' not full (`edge`, `word`; the papers sharing an identifier
    left out)."""

    sharing: set[int]
    edge: set[int]
    word: set[int]

    @property
    def titled(self) -> set[int]:
        """Those whose titles decide whether they are candidates."""
        return self.edge | self.word


@dataclass
class QueryPaper:
    """A query's canonical paper on its way into the stored index."""

    paper: CanonicalPaper
    kept: list[KeptRecord] = field(init=False)
    titles: list[str] = field(init=False)
    identifier_keys: frozenset[str] = field(init=False)
    word_keys: frozenset[str] = field(init=False)
    edge_keys: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        paper = self.paper
        # Its merged metadata as one record first, then its own records.
        summary = PaperRecord(
            source="query",
            title=paper.title,
            year=paper.year,
            authors=paper.authors,
            venue=paper.venue,
            doi=paper.doi,
            arxiv_id=paper.arxiv_id,
            pmid=paper.pmid,
        )
        records = [summary, *paper.records]
        self.kept = merge_kept(map(kept_record, records))
        # The crawl's index normalised the paper's title already.
        known = {paper.title: paper.normalized_title}
        titles = dict.fromkeys(
            known.get(title) or _normalized(title)
            for title in (values.get("title", "") for values in self.kept)
        )
        self.titles = [title for title in titles if title]
        self.identifier_keys = frozenset(_identifier_block_keys(records))
        word_keys: set[str] = set()
        edge_keys: set[str] = set()
        for title in self.titles:
            words, edges = _title_keys(title)
            word_keys.update(words)
            edge_keys.update(edges)
        self.word_keys, self.edge_keys = frozenset(word_keys), frozenset(edge_keys)

    @property
    def block_keys(self) -> frozenset[str]:
        """The blocks it is found in, and finds its candidates in."""
        return self.identifier_keys | self.word_keys | self.edge_keys

    @cached_property
    def records(self) -> list[PaperRecord]:
        return kept_paper_records(self.kept)

    def members(self, blocks: Blocks) -> Members:
        """The stored papers in its blocks (`blocks`: as stored, by key)."""
        sharing = _members(blocks, self.identifier_keys)
        return Members(
            sharing,
            _members(blocks, self.edge_keys) - sharing,
            _members(blocks, self.word_keys) - sharing,
        )

    def candidates(self, members: Members, titles: Mapping[int, Sequence[str]]) -> set[int]:
        """The stored papers the in-memory index could link with it (`titles`: the normalised
        titles of the papers in its title blocks, by id): those sharing an identifier; those of
        its word or edge blocks with a title similar to one of its own (similar_titles: C loops
        per title); and those of its edge blocks whose title could be linked with
        one of its own whatever its score (title_links.titles_could_link)."""
        found = set(members.sharing)
        owners: list[int] = []
        choices: list[str] = []
        for paper_id in members.titled:
            for title in titles.get(paper_id, ()):
                owners.append(paper_id)
                choices.append(title)
        for title in self.titles if choices else ():
            found.update(owners[position] for position in similar_titles(title, choices))
        words = [tuple(title.split()) for title in self.titles]
        for paper_id in members.edge - found:
            if any(
                titles_could_link(own, tuple(title.split()))
                for title in titles.get(paper_id, ())
                for own in words
            ):
                found.add(paper_id)
        return found


@dataclass(frozen=True)
class Match:
    """One paper as the save leaves it: the query's papers in it (positions) and the stored
    papers it is (ids, ascending; none for a new paper)."""

    positions: tuple[int, ...]
    stored: tuple[int, ...]


def match_papers(
    papers: Sequence[QueryPaper],
    candidates: Sequence[set[int]],
    stored: Mapping[int, Sequence[Mapping[str, Any]]],
    words: KnownWords,
) -> list[Match]:
    """Which stored papers the query's papers are, by the canonical index's links and matcher:
    `candidates` per paper (QueryPaper.candidates), `stored` their kept records by id, `words`
    those of every stored record's author and venue fields and of the query's records.
    One Match per paper of the result, in the order of the query's papers."""
    records = {i: kept_paper_records(stored[i]) for i in set().union(*candidates)}
    candidates = joinable(papers, candidates, records)
    index = CanonicalPaperIndex()
    index.know_words(words.names, words.venues)
    stored_ids = sorted(set().union(*candidates))
    stored_keys = dict(
        zip(
            stored_ids,
            index.add_groups((records[i] for i in stored_ids), side="stored"),
            strict=True,
        )
    )
    matched = [position for position, found in enumerate(candidates) if found]
    query_keys = dict(
        zip(
            matched, index.add_groups((papers[p].records for p in matched), side="new"), strict=True
        )
    )
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for position in range(len(papers)):
        key = query_keys.get(position)
        root = index.key_of(key) if key is not None else -1 - position
        groups.setdefault(root, ([], []))[0].append(position)
    for paper_id, key in stored_keys.items():
        if (group := groups.get(index.key_of(key))) is not None:
            group[1].append(paper_id)
    return [Match(tuple(positions), tuple(ids)) for positions, ids in groups.values()]


def joinable(
    papers: Sequence[QueryPaper],
    candidates: Sequence[set[int]],
    stored: Mapping[int, Sequence[PaperRecord]],
) -> list[set[int]]:
    """The candidates (`candidates`: per query paper; `stored`: their records by id)
    without those an identifier rules out: a stored paper shares no identifier with any
    query paper, and every query paper it is a candidate of has identifiers of a kind (doi,
    arxiv, pmid) it has too. Any group it could join by a title then holds values of that
    kind and none of its own (no two stored papers share an identifier: one that does is
    joined to it whatever else), so the rules never join it (canonical's `ids_agree`) and
    matching it would only cost time. Titles alike with DOIs of their own (numbered parts, a
    journal's issues, the simulator's corpus) are most of what blocks find among API records."""
    query_ids = [_ids_by_kind(paper.records) for paper in papers]
    every = {(kind, value) for ids in query_ids for kind, values in ids.items() for value in values}
    referrers: dict[int, list[int]] = {}
    for position, found in enumerate(candidates):
        for paper_id in found:
            referrers.setdefault(paper_id, []).append(position)
    ruled_out = set()
    for paper_id, positions in referrers.items():
        ids = _ids_by_kind(stored[paper_id])
        shares = not every.isdisjoint(
            (kind, value) for kind, values in ids.items() for value in values
        )
        if not shares and any(all(kind in query_ids[p] for p in positions) for kind in ids):
            ruled_out.add(paper_id)
    return [found - ruled_out for found in candidates] if ruled_out else list(candidates)


def _ids_by_kind(records: Iterable[PaperRecord]) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = {}
    for record in records:
        for kind, value in identifier_keys(record):
            ids.setdefault(kind, set()).add(value)
    return ids


def block_entries(
    blocks: Blocks, keyed: Iterable[tuple[int, Iterable[str]]]
) -> list[tuple[str, int]]:
    """The block memberships (key, paper id) to add: each paper enters the blocks of its keys,
    title blocks while they are not full. `blocks`: those blocks as stored (a key no paper has
    yet is absent)."""
    added: dict[str, int] = {}
    entries: list[tuple[str, int]] = []
    for paper_id, keys in keyed:
        for key in keys:
            members = blocks.get(key, ())
            if members is None or paper_id in members:
                continue  # a full title block, or one it is in
            size = len(members) + added.get(key, 0)
            # An identifier's block is never full: a paper sharing one is always the paper.
            if size < BLOCK_LIMIT or is_identifier_key(key):
                added[key] = size - len(members) + 1
                entries.append((key, paper_id))
    return entries


def known_words(records: Iterable[PaperRecord]) -> KnownWords:
    """The words of the records' author and venue fields."""
    names: set[str] = set()
    venues: set[str] = set()
    for record in records:
        name_words, venue_words = cited_words(record)
        names |= name_words
        venues |= venue_words
    return KnownWords(frozenset(names), frozenset(venues))


def _title_keys(normalized: str) -> tuple[list[str], list[str]]:
    """The word and edge keys of a normalised title; none for a generic title, which never
    merges by it."""
    if is_generic_title(normalized):
        return [], []
    return title_block_keys(normalized)


def _members(blocks: Blocks, keys: Iterable[str]) -> set[int]:
    """The stored papers in the blocks of `keys` (none in a full one)."""
    return {member for key in keys if (block := blocks.get(key)) for member in block}


def _identifier_block_keys(records: Iterable[PaperRecord]) -> set[str]:
    """Block keys of records' identifiers ("doi:10.1/x"), which cannot meet a title's: the words
    of a normalised title have no colon, and edge keys start with a sign."""
    return {f"{kind}:{value}" for record in records for kind, value in identifier_keys(record)}


def is_identifier_key(key: str) -> bool:
    """Whether a block key is an identifier's (read whole: an identifier's block is never
    full) rather than a title's."""
    return ":" in key
