"""Saving a query's papers into the one paper index: what both SQL stores do, without the SQL.

A store's `save_papers` runs in one transaction (PostgreSQL: under the papers lock, so paper
saves run one at a time across every node, as SQLite's write lock makes them):

1. it reads the blocks of `PapersSave.block_keys` (the identifiers and title keys of the
   query's papers), then the compact titles of the stored papers in them (`candidate_ids`),
   then the rows of those sharing an identifier with a paper or with a title close to one of
   its own (`close_ids`) whole: a row is read whole only when it may be the paper;
2. `PapersSave.writes` decides which stored rows each paper is (papers.paper_index:
   canonical.py's rules) and what every row becomes — one `PaperWrite` per row, new or stored,
   with the query's item URLs it links, the stored rows merged into it and the block keys it
   enters. A paper that several stored rows turn out to be (a preprint's row and its journal
   version's, joined by a record with both identifiers) makes them one row, the smallest id
   kept. The query's own papers were merged with each other by the crawl and are not matched
   with each other again;
3. the store runs the writes — rows merged away first have their items and block memberships
   moved to the kept row and are deleted — then adds the block memberships of
   `papers.paper_index.block_entries(...)`.

Column values merge as COALESCE would, the stored row first: its identifiers, title, year and
venue stay; the longest abstract wins; authors are the first non-empty list; the kept records,
external ids, sources and fetch URLs are united; two different attributions make `both`; and
the evidence is decided again on the result (papers.evidence).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lyra_crawl.backends.rows import Row, decode_json
from lyra_crawl.config import PapersPolicy
from lyra_crawl.papers.canonical import CanonicalPaper
from lyra_crawl.papers.evidence import decide_evidence, fetch_urls, merge_fetch_urls
from lyra_crawl.papers.paper_index import (
    KeptRecord,
    QueryPaper,
    StoredCandidate,
    block_entries,
    compact_titles,
    merge_kept,
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
# What a candidate is read with first: the compact titles of its kept records.
TITLE_COLUMNS = ("id", "match_titles")
_FIRST_KNOWN = ("doi", "arxiv_id", "pmid", "title", "normalized_title", "year", "venue")

Values = dict[str, Any]


@dataclass
class PaperWrite:
    """One `papers` row as the save leaves it; `row_id` None for a new row."""

    row_id: int | None
    values: Values
    urls: list[str] = field(default_factory=list)
    absorbed: list[int] = field(default_factory=list)
    # The block keys of the query's papers written into it: the row enters those blocks.
    block_keys: set[str] = field(default_factory=set)


class PapersSave:
    """One query's papers on their way into the index: what to read, then what to write."""

    def __init__(
        self, papers: Sequence[tuple[CanonicalPaper, Sequence[str]]], *, min_abstract_chars: int
    ) -> None:
        self.papers = papers
        self.min_abstract_chars = min_abstract_chars
        self._queried = [QueryPaper(paper) for paper, _ in papers]

    @property
    def block_keys(self) -> list[str]:
        """The blocks a save reads first: every paper's identifiers and title keys."""
        return sorted({key for queried in self._queried for key in queried.block_keys})

    def candidate_ids(self, blocks: Mapping[str, Sequence[int]]) -> list[int]:
        """The stored papers in the blocks read: their titles are read next (`TITLE_COLUMNS`)."""
        found: set[int] = set()
        for queried in self._queried:
            found |= queried.sharing_identifiers(blocks) | queried.title_candidates(blocks)
        return sorted(found)

    def close_ids(self, blocks: Mapping[str, Sequence[int]], titled: Iterable[Row]) -> list[int]:
        """The candidates sharing an identifier with a paper or with a title close to one of
        its own (`TITLE_COLUMNS` rows): the rows to read whole."""
        titles = {int(row["id"]): row["match_titles"] or "" for row in titled}
        close: set[int] = set()
        for queried in self._queried:
            close |= queried.sharing_identifiers(blocks)
            candidates = queried.title_candidates(blocks) & titles.keys()
            close |= queried.close_titles({i: titles[i] for i in candidates})
        return sorted(close & titles.keys())

    def writes(self, blocks: Mapping[str, Sequence[int]], rows: Iterable[Row]) -> list[PaperWrite]:
        """Which stored rows each paper is, and what every row written becomes: the writes in
        the order to run them. `rows`: the rows `close_ids` named, whole."""
        state = {int(row["id"]): row_values(row) for row in rows}
        # Candidates as matching sees them, each worked out once unless its kept records grow.
        seen: dict[int, StoredCandidate] = {}
        moved: dict[int, int] = {}
        stored: dict[int, PaperWrite] = {}
        new: list[PaperWrite] = []
        for (paper, urls), queried in zip(self.papers, self._queried, strict=True):
            sharing = {moved.get(i, i) for i in queried.sharing_identifiers(blocks)}
            others = {moved.get(i, i) for i in queried.title_candidates(blocks)} - sharing
            for i in others & state.keys() - seen.keys():
                seen[i] = StoredCandidate(i, state[i]["match_records"])
            judged = queried.matches([seen[i] for i in sorted(others & seen.keys())])
            matched = sorted((sharing & state.keys()) | set(judged))
            values = paper_values(paper, queried.kept)
            if not matched:
                merged = merge_values([values], self.min_abstract_chars)
                new.append(PaperWrite(None, merged, list(urls), block_keys=set(queried.block_keys)))
                continue
            keep, *absorbed = matched
            write = stored.setdefault(keep, PaperWrite(keep, state[keep]))
            for other in absorbed:
                moved.update({old: keep for old, kept_id in moved.items() if kept_id == other})
                moved[other] = keep
                seen.pop(other, None)
                write.absorbed.append(other)
                if (gone := stored.pop(other, None)) is not None:
                    write.urls += gone.urls
                    write.absorbed += gone.absorbed
                    write.block_keys |= gone.block_keys
            known = [state[keep], *(state.pop(other) for other in absorbed), values]
            write.values = state[keep] = merge_values(known, self.min_abstract_chars)
            seen.pop(keep, None)  # its kept records grew
            write.urls += urls
            write.block_keys |= queried.block_keys
        return [*stored.values(), *new]


def external_ids(paper: CanonicalPaper) -> dict[str, str]:
    """Each source's own id of the paper."""
    return {record.source: record.source_id for record in paper.records if record.source_id}


def paper_values(paper: CanonicalPaper, kept: list[KeptRecord]) -> Values:
    """A canonical paper as the columns of a row (what is derived left to `merge_values`)."""
    return {
        "doi": paper.doi,
        "arxiv_id": paper.arxiv_id,
        "pmid": paper.pmid,
        "title": paper.title,
        "normalized_title": paper.normalized_title,
        "match_records": kept,
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
    fields = {name: row[name] for name in ("title", "year", "doi", "arxiv_id", "pmid")}
    fields["authors"] = decode_json(row["authors"], [])
    return [{name: value for name, value in fields.items() if value}]


def row_values(row: Row) -> Values:
    """A stored `papers` row's columns, JSON decoded."""
    values = {column: row[column] for column in PAPER_COLUMNS}
    for column, empty in PAPER_JSON_COLUMNS.items():
        values[column] = decode_json(values[column], empty)
    values["match_records"] = kept_records(row)
    return values


def merge_values(known: Sequence[Values], min_abstract_chars: int) -> Values:
    """One row from several views of one paper, the first (the kept stored row) first."""
    merged: Values = {
        column: next((v[column] for v in known if v[column] is not None), None)
        for column in _FIRST_KNOWN
    }
    merged["match_records"] = merge_kept(*(v["match_records"] for v in known))
    merged["match_titles"] = "\n".join(compact_titles(merged["match_records"]))
    abstracts = [v["abstract"] for v in known if v["abstract"]]
    merged["abstract"] = max(abstracts, key=len, default=None)
    merged["authors"] = next((v["authors"] for v in known if v["authors"]), [])
    merged["external_ids"] = {k: i for v in known for k, i in v["external_ids"].items()}
    merged["sources"] = sorted({source for v in known for source in v["sources"]})
    attributions = {v["attribution"] for v in known}
    merged["attribution"] = attributions.pop() if len(attributions) == 1 else "both"
    merged["fetch_urls"] = merge_fetch_urls(*(v["fetch_urls"] for v in known))
    evidence = decide_evidence(
        merged["abstract"], merged["fetch_urls"], min_abstract_chars=min_abstract_chars
    )
    merged["evidence"] = evidence.evidence
    merged["fetch_url"] = evidence.fetch_url
    merged["evidence_reason"] = evidence.reason
    return {column: merged[column] for column in PAPER_COLUMNS}


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
    keyed = [
        (row_id, StoredCandidate(row_id, values["match_records"]).block_keys)
        for row_id, values in upgraded
    ]
    return IndexUpgrade(block_entries({}, keyed), upgraded)
