"""The arguments of `scrapy crawl papers` (lyra_crawl.spiders.papers), validated. Pure.

`-a task_id=T` or `-a query_id=N`, exactly one: the record's annotations are the schema, as
for a serp crawl's arguments (query.arguments), and a problem is one ArgumentError line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, TypeAdapter

from lyra_crawl.config.errors import problem
from lyra_crawl.query.argument_fields import ArgumentError, Text, validated, whole
from lyra_crawl.query.arguments import SCRAPYD_ARGUMENTS
from lyra_crawl.quoting import show

PAPERS_ARGUMENTS = frozenset({"task_id", "query_id"})


def _task(raw: Any) -> str | None:
    return str(raw or "").strip() or None


@dataclass(frozen=True, kw_only=True)
class PapersTarget:
    """The papers a `papers` crawl reads the landing pages of: one task's, or one query's."""

    task_id: Annotated[str | None, PlainValidator(_task)] = None
    query_id: Annotated[int | None, whole(1)] = None
    job_id: Annotated[str | None, Field(alias="_job"), Text] = None


def _known(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    unknown = sorted(set(raw) - PAPERS_ARGUMENTS - SCRAPYD_ARGUMENTS)
    if unknown:
        raise problem(
            f"unknown spider argument {show(unknown[0])} for the papers spider: "
            "use -a task_id=T or -a query_id=N"
        )
    return raw


def _one_target(target: PapersTarget) -> PapersTarget:
    if target.task_id is None and target.query_id is None:
        raise problem(
            "the papers spider reads the papers of a task or of a query: "
            "-a task_id=T or -a query_id=N"
        )
    if target.task_id is not None and target.query_id is not None:
        raise problem("task_id and query_id cannot go together: give -a task_id=T or -a query_id=N")
    return target


_PAPERS_TARGET = TypeAdapter(
    Annotated[PapersTarget, BeforeValidator(_known), AfterValidator(_one_target)]
)


def parse_papers_target(raw: Mapping[str, Any]) -> PapersTarget:
    """`-a task_id=T` or `-a query_id=N` (exactly one), checked."""
    return validated(_PAPERS_TARGET, raw)


def parse_papers_budget(raw: Any) -> int:
    """LYRA_PAPERS_DAILY_BUDGET: landing pages a day, a whole number of at least 1."""
    try:
        budget = int(str(raw).strip())
    except ValueError:
        budget = 0
    if budget < 1:
        raise ArgumentError(
            f"LYRA_PAPERS_DAILY_BUDGET must be a whole number of pages of at least 1 "
            f"(got {show(raw)}): -s LYRA_PAPERS_DAILY_BUDGET=500"
        )
    return budget
