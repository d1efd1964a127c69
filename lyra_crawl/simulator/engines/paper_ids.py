"""The ids the simulated paper APIs give a paper, and finding a paper again by any of them.

A paper is a PaperKey (lyra_crawl.simulator.citations). Semantic Scholar names it by a 40-hex
paperId, OpenAlex by a W-id; a paper with a preprint (a DOI'd corpus result whose number is a
multiple of 10) has a second id in each, its preprint's. Ids are hashes, so finding a paper by
one (`/paper/{id}`, `/works/{id}`, a DOI link, a publisher page) goes through PaperIndex: it
lists the ids of every paper of the queries the simulator was asked, as a real API knows every
paper it ever handed out.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from lyra_crawl.simulator.citations import (
    OUTSIDE_BASE,
    PaperKey,
    graph_papers,
    references,
    unmatched,
)
from lyra_crawl.simulator.corpus import SimResult, doi_of, make_result
from lyra_crawl.simulator.engines.scholarly import arxiv_id

IdKind = Literal["s2", "openalex", "doi", "landing"]


def has_preprint(number: int) -> bool:
    """A corpus paper whose number is a multiple of 10 (so it has a DOI) has an arXiv preprint;
    outside papers have none."""
    return number % 10 == 0 and number < OUTSIDE_BASE


def preprint_doi(number: int) -> str:
    return f"10.48550/arxiv.{arxiv_id(number)}"


def s2_paper_id(query: str, number: int, *, preprint: bool = False) -> str:
    """Semantic Scholar's paperId of the paper (of its separate preprint record)."""
    name = f"s2|{query}|{number}" + ("|preprint" if preprint else "")
    return hashlib.sha1(name.encode()).hexdigest()


def openalex_work_id(query: str, number: int, *, preprint: bool = False) -> str:
    """OpenAlex's W-id of the paper's work (of its preprint's work)."""
    known = _graph_work_ids(query).get((number, preprint))
    return known or _computed_work_id(query, number, preprint=preprint)


def _computed_work_id(query: str, number: int, *, preprint: bool) -> str:
    doi = preprint_doi(number) if preprint else doi_of(query, number)
    digest = hashlib.sha1(f"openalex|{query}|{doi or number}".encode()).hexdigest()
    return f"W{int(digest, 16) % 10**10}"


@lru_cache(maxsize=64)
def _graph_work_ids(query: str) -> dict[tuple[int, bool], str]:
    """The W-ids of the papers of the query's graph: search pages and references ask often."""
    table = {}
    for key in graph_papers(query):
        for preprint in (False, True) if has_preprint(key.number) else (False,):
            table[key.number, preprint] = _computed_work_id(query, key.number, preprint=preprint)
    return table


def graph_result(key: PaperKey) -> SimResult:
    """The paper as the graph shows it: make_result's, on topic."""
    return make_result(key.query, key.number, on_topic=True)


@dataclass(frozen=True)
class Found:
    """A paper, and which of its records an id names."""

    key: PaperKey
    # The id named the paper's preprint record (work) rather than its own.
    preprint: bool = False


def cited_as(key: PaperKey) -> Found | None:
    """The record the APIs name at the cited end of an edge to `key`: its preprint's when it
    has one; None when the reference is unmatched (no record at all)."""
    if unmatched(key):
        return None
    return Found(key, preprint=has_preprint(key.number))


def openalex_reference_ids(key: PaperKey) -> list[str]:
    """The W-ids of the works `key` cites, as its `referenced_works` lists them."""
    return [
        openalex_work_id(found.key.query, found.key.number, preprint=found.preprint)
        for target in references(key)
        if (found := cited_as(target)) is not None
    ]


class PaperIndex:
    """Every id of every paper in the graphs of the queries asked so far. Thread-safe.

    A query's ids (about a thousand) are listed on the first lookup after it was asked, so
    crawls that look nothing up pay one set insertion per query.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queries: set[str] = set()
        self._unlisted: list[str] = []
        self._ids: dict[tuple[IdKind, str], Found] = {}

    def remember(self, query: str) -> None:
        with self._lock:
            if query not in self._queries:
                self._queries.add(query)
                self._unlisted.append(query)

    def find(self, kind: IdKind, value: str) -> Found | None:
        """The paper `value` names; ids are case-sensitive except DOIs. The first query asked
        wins when two share an id (landing paths of queries with the same first four words)."""
        if kind == "doi":
            value = value.lower()
        with self._lock:
            for query in self._unlisted:
                self._list(query)
            self._unlisted.clear()
            return self._ids.get((kind, value))

    def _list(self, query: str) -> None:
        for key in graph_papers(query):
            if unmatched(key):
                continue
            result = graph_result(key)
            found = Found(key)
            self._add("s2", s2_paper_id(query, key.number), found)
            self._add("openalex", openalex_work_id(query, key.number), found)
            self._add("landing", urlsplit(result.landing_url).path, found)
            if result.doi:
                self._add("doi", result.doi.lower(), found)
            if has_preprint(key.number):
                preprint = Found(key, preprint=True)
                self._add("s2", s2_paper_id(query, key.number, preprint=True), preprint)
                self._add("openalex", openalex_work_id(query, key.number, preprint=True), preprint)
                self._add("doi", preprint_doi(key.number), preprint)

    def _add(self, kind: IdKind, value: str, found: Found) -> None:
        self._ids.setdefault((kind, value), found)
