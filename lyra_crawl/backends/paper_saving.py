"""Saving a query's papers into the one paper index: what the SQL store does (backends.store),
without the SQL.

A store's `save_papers` runs in one transaction (PostgreSQL: under the papers lock, so paper
saves run one at a time across every node, as SQLite's write lock makes them), every read and
write of it batch-shaped, one statement each over all the query's papers:

1. it moves the store's paper index generation on (`PapersSave.start`);
   reads the blocks of the query's papers' identifiers (`PapersSave.identifier_keys`, whole)
   and title keys (`PapersSave.title_keys`: word and edge keys; a block of BLOCK_LIMIT papers
   or more is full and read as None), a block by the 64-bit hash of its key (`block_hash`,
   table `paper_index_blocks`); then `TITLE_COLUMNS` of the papers in the title blocks
   whose titles this process has not seen (`PapersSave.titled_ids`); then the rows of the
   candidates whole (`PapersSave.candidate_ids`: the stored papers the in-memory index could
   link a paper with, papers.paper_index); then the words known from stored records' author
   and venue fields among the words of the titles to match (`PapersSave.title_words`, table
   `paper_words`);
2. `PapersSave.writes` matches all the query's papers with their candidates in ONE canonical
   index (papers.paper_index.match_papers: canonical.py's rules) and says what every row
   becomes — one `PaperWrite` per row, stored or new, with the query's item URLs it links, the
   stored rows merged into it and the block keys it enters. A paper that several stored rows
   turn out to be (a preprint's row and its journal version's, joined by a record with both
   identifiers) makes them one row, the smallest id kept;
3. the store runs the writes — rows merged away first have their items and block memberships
   moved to the kept row and are deleted, then one executemany each for the updated rows, the
   new rows, the items' links, the block memberships (`PapersSave.written`) and the words of
   the query's records (`PapersSave.word_entries`);
4. a result of the query that no paper of its own has (a web result without an identifier) is
   the paper another query's result at its normalized URL is linked to, when exactly one paper
   is (`statements.LINKS_BY_URL`); the paper then counts the result's source among its sources
   (`UrlLinks`), and the query counts it as `serp_only`.

Both stores make the reads and the matching of steps 1 and 2 ahead of the transaction, outside
the lock every other save waits for (SQLite's write lock, which every write of every process on
the file waits for; PostgreSQL's papers lock, every node's saves), at the generation they read
(`PapersSave.read_at`), and keep them when the transaction's generation is the next one: no
save, nor an abstract read from a landing page, came between. Else they are made again in the
transaction. Reading and matching are most of a save's time.

Column values merge as COALESCE would, the stored row first: its identifiers, title, year and
venue stay; the longest abstract wins; authors are the first non-empty list; the kept records,
external ids, sources and fetch URLs are united; two different attributions make `both`; and
the evidence is decided again on the result (papers.evidence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from hashlib import md5
from struct import Struct
from typing import Any

from lyra_crawl.backends.rows import Row, decode_json
from lyra_crawl.config import PapersPolicy
from lyra_crawl.papers.canonical import CanonicalPaper
from lyra_crawl.papers.evidence import decide_evidence, fetch_urls, merge_fetch_urls
from lyra_crawl.papers.paper_index import (
    Blocks,
    KeptRecord,
    KnownWords,
    Members,
    QueryPaper,
    block_entries,
    kept_paper_records,
    kept_titles,
    known_words,
    match_papers,
    merge_kept,
    stored_block_keys,
)

# The columns of a `papers` row that a save writes (besides id and the instants), and those of
# them holding JSON, with their empty value.
PAPER_COLUMNS = (
    "doi",
    "arxiv_id",
    "pmid",
    "title",
    "normalized_title",
    "match_records",
    "match_titles",
    "year",
    "authors",
    "venue",
    "abstract",
    "external_ids",
    "attribution",
    "sources",
    "fetch_urls",
    "evidence",
    "fetch_url",
    "evidence_reason",
)
PAPER_JSON_COLUMNS: Mapping[str, Any] = {
    "match_records": [],
    "authors": [],
    "external_ids": {},
    "sources": [],
    "fetch_urls": {},
}
# What a paper of a word block is read with first: the normalised titles of its kept records.
TITLE_COLUMNS = ("id", "match_titles")
# `paper_words.kind` of the words of author names and of venues.
NAME, VENUE = "name", "venue"
_FIRST_KNOWN = ("doi", "arxiv_id", "pmid", "title", "normalized_title", "year", "venue")

Values = dict[str, Any]
# Stored blocks by the hash of their key (`block_hash`): their papers' ids, None for a full one.
HashedBlocks = Mapping[int, Sequence[int] | None]
# The first 8 bytes of a digest as a big-endian signed integer (one call: many keys a save).
_first_int64 = Struct(">q").unpack_from


def block_hash(key: str) -> int:
    """A block key as the store keeps it: the first 8 bytes of its MD5 as a signed 64-bit
    integer, as PostgreSQL computes it too (`('x' || left(md5(key), 16))::bit(64)::bigint`).
    Eight bytes a key keep the blocks' B-trees small; two of a million keys collide with a
    chance of about 3 in 10^8, and would only make two blocks one."""
    return _first_int64(md5(key.encode()).digest())[0]


@dataclass
class PaperWrite:
    """One `papers` row as the save leaves it; `row_id` None for a new row."""

    row_id: int | None
    values: Values
    urls: list[str] = field(default_factory=list)
    absorbed: list[int] = field(default_factory=list)
    # The block keys of the query's papers written into it: the row enters those blocks.
    block_keys: set[str] = field(default_factory=set)


class StoredTitles:
    """Stored papers' `match_titles` as one process last read or wrote them, so that a save
    reads from the store only the titles it has not seen.

    The store stays the source of truth: every save moves the store's paper index generation
    on by one (`start`), and the titles kept are used only while the generation a save moves
    from is the one this process's last save moved to, i.e. no other process (nor another
    store of this one) has saved papers in between; else they are dropped. A save that fails
    leaves them a generation ahead of the store, so the next save drops them too. At most
    `limit` papers' titles are kept (about 200 bytes each).
    """

    def __init__(self, limit: int = 200_000) -> None:
        self.limit = limit
        self.generation: int | None = None
        # Tuples of text: nothing the cyclic collector keeps scanning.
        self._titles: dict[int, tuple[str, ...]] = {}

    def start(self, generation: int) -> None:
        """A save begins: it moved the store's generation to `generation`."""
        self.read_at(generation - 1)
        self.generation = generation

    def read_at(self, generation: int) -> None:
        """A save reads ahead of its transaction, the store at `generation`."""
        if generation != self.generation or len(self._titles) > self.limit:
            self._titles.clear()
        self.generation = generation

    def missing(self, ids: Iterable[int]) -> list[int]:
        return [paper_id for paper_id in ids if paper_id not in self._titles]

    def read(self, rows: Iterable[Row]) -> None:
        """Titles read from the store (`TITLE_COLUMNS` rows)."""
        for row in rows:
            self._titles[int(row["id"])] = tuple((row["match_titles"] or "").splitlines())

    def written(self, writes: Sequence[PaperWrite], paper_ids: Sequence[int]) -> None:
        """The titles of rows a save wrote (`paper_ids`, one per write); rows merged away gone."""
        for paper_id, write in zip(paper_ids, writes, strict=True):
            self._titles[paper_id] = tuple(write.values["match_titles"].splitlines())
            for gone in write.absorbed:
                self._titles.pop(gone, None)

    def get(self, paper_id: int) -> tuple[str, ...]:
        return self._titles.get(paper_id, ())


class PapersSave:
    """One query's papers on their way into the index: what to read, step by step, then what
    to write (see the module's docstring for the order)."""

    def __init__(
        self,
        papers: Sequence[tuple[CanonicalPaper, Sequence[str]]],
        *,
        min_abstract_chars: int,
        titles: StoredTitles,
    ) -> None:
        self.papers = papers
        self.min_abstract_chars = min_abstract_chars
        self._titles = titles
        self._queried = [QueryPaper(paper) for paper, _ in papers]
        # What the steps found, for the next ones.
        self._blocks: Blocks = {}
        self._members: list[Members] = []
        self._titled: set[int] = set()
        self._candidates: list[set[int]] = []
        self._writes: list[PaperWrite] = []
        self._read_at: int | None = None

    def read_at(self, generation: int) -> None:
        """The save reads ahead of its transaction, the store's paper index at `generation`."""
        self._titles.read_at(generation)
        self._read_at = generation

    def start(self, generation: int) -> bool:
        """The save's transaction moved the store's paper index generation to `generation`;
        whether what it read ahead (`read_at`) is still the store's: no save came between.
        Else it reads again, step by step."""
        self._titles.start(generation)
        return self._read_at == generation - 1

    @cached_property
    def _hashes(self) -> dict[str, int]:
        """Every block key of the query's papers, and its hash (`block_hash`)."""
        return {
            key: block_hash(key)
            for key in {key for queried in self._queried for key in queried.block_keys}
        }

    @property
    def identifier_keys(self) -> list[int]:
        """The identifier blocks a save reads first, whole (`block_hash`es): every paper's
        identifiers."""
        hashes = self._hashes
        return list({hashes[key] for queried in self._queried for key in queried.identifier_keys})

    @property
    def title_keys(self) -> list[int]:
        """The title blocks a save reads first, unless full (BLOCK_LIMIT papers; `block_hash`es):
        every paper's word and edge keys."""
        hashes = self._hashes
        return list(
            {
                hashes[key]
                for queried in self._queried
                for key in queried.word_keys | queried.edge_keys
            }
        )

    def titled_ids(self, found: HashedBlocks) -> list[int]:
        """The stored papers in the title blocks read (`found`, identifier and title blocks by
        hash; None for a full one) whose titles this process has not seen: they are read next
        (`TITLE_COLUMNS`)."""
        blocks = {key: found[hashed] for key, hashed in self._hashes.items() if hashed in found}
        self._blocks = blocks
        self._members = [queried.members(blocks) for queried in self._queried]
        self._titled = set().union(*(members.titled for members in self._members))
        return self._titles.missing(self._titled)

    def candidate_ids(self, titled: Iterable[Row]) -> list[int]:
        """Every paper's candidates (`titled`: the `TITLE_COLUMNS` rows read): the rows to
        read whole."""
        self._titles.read(titled)
        titles = {paper_id: self._titles.get(paper_id) for paper_id in self._titled}
        self._candidates = [
            queried.candidates(members, titles)
            for queried, members in zip(self._queried, self._members, strict=True)
        ]
        return sorted(set().union(*self._candidates))

    def title_words(self, rows: Iterable[Row]) -> list[str]:
        """The words of the titles to match, the query's papers' with candidates and their
        candidates' (`rows`): which of them are known author or venue words is read next."""
        words = {word for row in rows for word in (row["match_titles"] or "").split()}
        for queried, found in zip(self._queried, self._candidates, strict=True):
            if found:
                words.update(word for title in queried.titles for word in title.split())
        return sorted(words)

    def writes(self, rows: Iterable[Row], words: Iterable[tuple[str, str]]) -> list[PaperWrite]:
        """Which stored rows each paper is, and what every row written becomes: the writes in
        the order to run them. `rows`: the candidates' rows whole; `words`: the (word, kind)
        rows read for `title_words`."""
        # Every candidate's kept records are read; its other columns only if it is matched.
        stored_rows = {int(row["id"]): row for row in rows}
        kept = {paper_id: kept_records(row) for paper_id, row in stored_rows.items()}
        stored_words = {NAME: set[str](), VENUE: set[str]()}
        for word, kind in words:
            stored_words[kind].add(word)
        query_words = self._query_words
        matches = match_papers(
            self._queried,
            [found & kept.keys() for found in self._candidates],
            kept,
            KnownWords(
                query_words.names | stored_words[NAME], query_words.venues | stored_words[VENUE]
            ),
        )
        stored: list[PaperWrite] = []
        new: list[PaperWrite] = []
        for match in matches:
            found = [paper_values(self._queried[p]) for p in match.positions]
            write = PaperWrite(
                None,
                {},
                [url for p in match.positions for url in self.papers[p][1]],
                block_keys=set().union(*(self._queried[p].block_keys for p in match.positions)),
            )
            if match.stored:
                write.row_id, *write.absorbed = match.stored
                found = [
                    *(row_values(stored_rows[i], kept[i]) for i in match.stored),
                    *found,
                ]
            write.values = merge_values(found, self.min_abstract_chars)
            (stored if match.stored else new).append(write)
        self._writes = [*stored, *new]
        return self._writes

    def written(self, paper_ids: Sequence[int]) -> list[tuple[int, int]]:
        """The writes ran, giving the rows `paper_ids` (one per write): the block memberships
        (key's hash, paper id) they add, in that order (inserted in order, one after another
        touches the same pages of the blocks' index)."""
        writes = self._writes
        self._titles.written(writes, paper_ids)
        hashes = self._hashes
        return sorted(
            (hashes[key], paper_id)
            for key, paper_id in block_entries(
                self._blocks,
                ((paper_id, w.block_keys) for paper_id, w in zip(paper_ids, writes, strict=True)),
            )
        )

    @property
    def word_entries(self) -> list[tuple[str, str]]:
        """The (word, kind) rows of the query's records' author and venue fields."""
        return word_entries(self._query_words)

    @cached_property
    def _query_words(self) -> KnownWords:
        return known_words(record for paper, _ in self.papers for record in paper.records)


def external_ids(paper: CanonicalPaper) -> dict[str, str]:
    """Each source's own id of the paper."""
    return {record.source: record.source_id for record in paper.records if record.source_id}


def paper_values(queried: QueryPaper) -> Values:
    """A query's paper as the columns of a row (its evidence left to `merge_values`)."""
    paper = queried.paper
    return {
        "doi": paper.doi,
        "arxiv_id": paper.arxiv_id,
        "pmid": paper.pmid,
        "title": paper.title,
        "normalized_title": paper.normalized_title,
        "match_records": queried.kept,
        "match_titles": "\n".join(queried.titles),
        "year": paper.year,
        "authors": list(paper.authors),
        "venue": paper.venue,
        "abstract": paper.abstract,
        "external_ids": external_ids(paper),
        "attribution": paper.attribution,
        "sources": sorted(paper.sources),
        "fetch_urls": fetch_urls(
            paper.records, doi=paper.doi, arxiv_id=paper.arxiv_id, pmid=paper.pmid
        ),
    }


def kept_records(row: Row) -> list[KeptRecord]:
    """A stored row's kept records (`match_records`); a row from before records were kept
    stands for its one record."""
    kept = decode_json(row["match_records"], [])
    if kept:
        return kept
    fields = {name: row[name] for name in ("title", "year", "venue", "doi", "arxiv_id", "pmid")}
    fields["authors"] = decode_json(row["authors"], [])
    return [{name: value for name, value in fields.items() if value}]


def row_values(row: Row, kept: list[KeptRecord] | None = None) -> Values:
    """A stored `papers` row's columns, JSON decoded (its kept records: `kept`, if read)."""
    values = {column: row[column] for column in PAPER_COLUMNS}
    for column, empty in PAPER_JSON_COLUMNS.items():
        if column != "match_records":
            values[column] = decode_json(values[column], empty)
    values["match_records"] = kept_records(row) if kept is None else kept
    return values


def merge_values(known: Sequence[Values], min_abstract_chars: int) -> Values:
    """One row from several views of one paper, the first (the kept stored row) first; its
    evidence decided on the result."""
    merged = dict(known[0]) if len(known) == 1 else _merged(known)
    if not merged["match_titles"]:
        merged["match_titles"] = "\n".join(kept_titles(merged["match_records"]))
    evidence = decide_evidence(
        merged["abstract"], merged["fetch_urls"], min_abstract_chars=min_abstract_chars
    )
    merged["evidence"] = evidence.evidence
    merged["fetch_url"] = evidence.fetch_url
    merged["evidence_reason"] = evidence.reason
    return {column: merged[column] for column in PAPER_COLUMNS}


def _merged(known: Sequence[Values]) -> Values:
    merged: Values = {
        column: next((v[column] for v in known if v[column] is not None), None)
        for column in _FIRST_KNOWN
    }
    merged["match_records"] = merge_kept(*(v["match_records"] for v in known))
    merged["match_titles"] = None  # from the merged kept records
    abstracts = [v["abstract"] for v in known if v["abstract"]]
    merged["abstract"] = max(abstracts, key=len, default=None)
    merged["authors"] = next((v["authors"] for v in known if v["authors"]), [])
    merged["external_ids"] = {k: i for v in known for k, i in v["external_ids"].items()}
    merged["sources"] = sorted({source for v in known for source in v["sources"]})
    merged["attribution"] = joined_attribution(v["attribution"] for v in known)
    merged["fetch_urls"] = merge_fetch_urls(*(v["fetch_urls"] for v in known))
    return merged


def joined_attribution(attributions: Iterable[str]) -> str:
    """One paper's attribution from those of its views: theirs when they agree, else `both`."""
    found = set(attributions)
    return found.pop() if len(found) == 1 else "both"


# What the upgrade to the paper index writes on every stored paper.
UPGRADED_COLUMNS = (
    "match_records",
    "match_titles",
    "fetch_urls",
    "evidence",
    "fetch_url",
    "evidence_reason",
)


@dataclass(frozen=True)
class IndexUpgrade:
    """What papers stored before the index need: their block memberships (key, paper id), and
    each row's values (UPGRADED_COLUMNS among them; JSON decoded)."""

    blocks: list[tuple[str, int]]
    rows: list[tuple[int, Values]]


def word_entries(words: KnownWords) -> list[tuple[str, str]]:
    """Known words as `paper_words` rows (word, kind)."""
    return [(word, NAME) for word in sorted(words.names)] + [
        (word, VENUE) for word in sorted(words.venues)
    ]


def upgrade_to_index(rows: Iterable[Row]) -> IndexUpgrade:
    """The index over papers stored before it, from their rows (a store's schema upgrade).

    Their evidence is decided with the default `papers.min_abstract_chars` (the store does not
    know the config); the next save of each paper decides again with the configured one.
    """
    upgraded = []
    for row in sorted(rows, key=lambda row: int(row["id"])):
        values = row_values(row)
        values["fetch_urls"] = merge_fetch_urls(
            values["fetch_urls"],
            fetch_urls((), doi=values["doi"], arxiv_id=values["arxiv_id"], pmid=values["pmid"]),
        )
        upgraded.append((int(row["id"]), merge_values([values], PapersPolicy().min_abstract_chars)))
    keyed = [(row_id, stored_block_keys(values["match_records"])) for row_id, values in upgraded]
    return IndexUpgrade(block_entries({}, keyed), upgraded)


@dataclass(frozen=True)
class MatchingUpgrade:
    """What papers stored before a save read the words of records and stored papers' titles
    need: the (word, kind) rows of their kept records' author and venue fields, and each row's
    `match_titles` as a save reads them (its kept titles normalised; once their compact form),
    as (match_titles, paper id)."""

    words: list[tuple[str, str]]
    titles: list[tuple[str, int]]


def upgrade_matching(rows: Iterable[Row]) -> MatchingUpgrade:
    """The words and titles of papers stored before them, from their rows (a store's schema
    upgrade)."""
    kept = [(int(row["id"]), kept_records(row)) for row in rows]
    words = known_words(record for _, found in kept for record in kept_paper_records(found))
    titles = [("\n".join(kept_titles(found)), row_id) for row_id, found in kept]
    return MatchingUpgrade(word_entries(words), titles)


@dataclass(frozen=True)
class UrlLinks:
    """What statements.LINKS_BY_URL found for a query: its items to link, and what their papers
    become."""

    found: Sequence[tuple[int, str, int]]  # item id, its source, the paper

    @property
    def item_links(self) -> list[tuple[int, int]]:
        """(paper id, item id) of each item to link."""
        return [(paper_id, item_id) for item_id, _, paper_id in self.found]

    @cached_property
    def found_by(self) -> dict[int, set[str]]:
        """The sources of the linked items, by paper."""
        found_by: dict[int, set[str]] = {}
        for _, source, paper_id in self.found:
            found_by.setdefault(paper_id, set()).add(source)
        return found_by

    def paper_updates(self, stored: Iterable[tuple[int, Sequence[str], str]]) -> list[Values]:
        """The papers' (id, sources, attribution) as they become with the linked items (web
        results, found `serp_only`) as views of them."""
        return [
            {
                "id": paper_id,
                "sources": sorted({*sources, *self.found_by[paper_id]}),
                "attribution": joined_attribution((attribution, "serp_only")),
            }
            for paper_id, sources, attribution in stored
        ]

    def attribution(self, counts: Mapping[str, int], had: Iterable[int]) -> dict[str, int]:
        """The query's attribution `counts` with the papers it gains (`serp_only`), given those
        its items were linked to already (`had`)."""
        gained = len(self.found_by.keys() - set(had))
        return {**counts, "serp_only": counts.get("serp_only", 0) + gained}
