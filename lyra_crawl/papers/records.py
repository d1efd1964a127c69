"""A paper's record as the merge reads it: one result about a paper, from one source. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from lyra_crawl.results import ResultFields, ResultKind

__all__ = ["PaperRecord", "RecordKind"]

RecordKind = ResultKind


@dataclass(kw_only=True)
class PaperRecord(ResultFields):
    """One result about a paper, from one source (a SERP engine or a scholarly API)."""

    source: str
    title: str
    kind: RecordKind = "api"
    url: str | None = None
