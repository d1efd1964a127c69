"""The types of a paper's citation links at an API: requests, what a reader found, answers.

Pure; lyra_crawl.engines.citations builds and judges them, one module per API reads them
(semantic_scholar_citations, openalex_citations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, Outcome, PageRequest, SerpResult


class Relation(StrEnum):
    # The papers a paper cites.
    REFERENCES = "references"
    # The papers citing it.
    CITATIONS = "citations"


class LinkStep(StrEnum):
    """What a citation request asks for, and so which reader reads its answer."""

    # A page of a list, the papers at the other end in it.
    LIST = "list"
    # OpenAlex: the paper's work, naming the works it references and how often it is cited.
    WORK = "work"
    # OpenAlex: the records of referenced works, by id.
    LOOKUP = "lookup"


@dataclass(frozen=True)
class PaperIds:
    """What an API may know a paper by: its identifiers and each source's own id of it."""

    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    # Engine name -> that source's id (Semantic Scholar's paperId, OpenAlex's W-id).
    source_ids: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LinkRequest:
    """One request for a part of a paper's links at one API."""

    page: PageRequest
    step: LinkStep
    # The lists it serves. A request that reads papers serves one list; OpenAlex's work serves
    # both (it names the references and leads to the citations).
    relations: tuple[Relation, ...]
    # How many links of its list it and the pages after it may still read
    # (citations.max_per_list less those read before).
    room: int
    page_number: int = 1
    # Lookups: how many records were asked for.
    asked: int = 0

    @property
    def relation(self) -> Relation:
        """The list whose papers the answer holds."""
        return self.relations[0]


@dataclass(frozen=True)
class LinksFound:
    """What an API module's reader found in an answer, before `read_links` judges it."""

    papers: tuple[SerpResult, ...] = ()
    following: tuple[LinkRequest, ...] = ()
    error: str = ""
    layout_changed: str = ""
    dropped: dict[str, int] = field(default_factory=dict)

    @classmethod
    def problem(cls, extracted: Extracted) -> LinksFound:
        """The error or other shape a shared reader (shapes.json_document, …) reported."""
        return cls(error=extracted.error, layout_changed=extracted.layout_changed)


@dataclass(frozen=True)
class LinkPage:
    """One answer of a citation request, judged: what it was, the papers at the other end,
    and the requests that follow."""

    outcome: Outcome
    detail: str = ""
    papers: tuple[SerpResult, ...] = ()
    following: tuple[LinkRequest, ...] = ()
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def blocked(self) -> bool:
        return self.outcome.is_block


class LinkApi(Protocol):
    """What an API's citation module offers (a module satisfies it)."""

    def first_requests(
        self, spec: EngineSpec, ids: PaperIds, *, max_per_list: int, secrets: Mapping[str, str]
    ) -> tuple[LinkRequest, ...]: ...

    def read(
        self, spec: EngineSpec, request: LinkRequest, body: bytes, *, secrets: Mapping[str, str]
    ) -> LinksFound: ...
