"""Batch files: many queries with per-query options over batch defaults. Pure.

A batch file is YAML (see config/batch.example.yaml):

    defaults: {engine: mojeek, serp_max_pages: 3}
    queries:
      - climate adaptation                # a plain query takes the defaults
      - query: sea level rise
        engine: duckduckgo
        task_id: coasts

The file's shape (`BatchDocument`: defaults and queries; `Entry`: a query text, or a mapping with
its query and options) is a pydantic schema, as the config's is; each entry's options become the
spider arguments `-a` would give, checked by the spider's own record
(arguments.parse_crawl_arguments: the same rules and the same words), which asks every engine it
goes to whether it can take it. A bad entry is rejected with its position and the rest still
run; a file that is not a batch at all raises BatchError, as does one past BATCH_LIMITS
(config.bounded_yaml: size, entries, values, nesting, aliases). Every problem is one line,
shaped as the config's (config.errors.said): `b.yaml: entry 2: strategy must be one of …`.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainValidator, SkipValidation, TypeAdapter, ValidationError

from lyra_crawl.config import LyraConfig
from lyra_crawl.config.bounded_yaml import YamlLimits, YamlRefused, load_yaml, read_text
from lyra_crawl.config.errors import problem, said
from lyra_crawl.config.fields import null_as
from lyra_crawl.query.argument_fields import ArgumentError, validated
from lyra_crawl.query.arguments import (
    SERP_SOURCE,
    CrawlArguments,
    crawl_sources,
    parse_crawl_arguments,
)
from lyra_crawl.query.cache_key import cache_key
from lyra_crawl.query.text import normalize_query
from lyra_crawl.quoting import show
from lyra_crawl.records import BatchEntry as StoredEntry
from lyra_crawl.records import BatchProgress, EntrySpec

# Outcomes that count as success; every other one makes the batch fail.
SUCCEEDED = frozenset({"finished", "cached"})
# entry_status's words, in the order a summary counts them.
_STATUSES = ("finished", "cached", "failed", "rejected", "not run")
# A batch of at most this many entries ends with a line per entry; a larger one with the
# entries that did not succeed, at most this many of them.
SUMMARY_ENTRIES = 20
# The detail of an entry answered by a fresh cache entry when the batch was recorded.
CACHED = "cached"
# The most entries one batch file holds: recording them holds them all in memory at once.
MAX_BATCH_ENTRIES = 50_000
# An entry is a query and a few options: 50,000 of them take a few MB and ~500,000 values.
BATCH_LIMITS = YamlLimits(
    max_bytes=8 * 2**20,
    max_values=500_000,
    max_part_values=1_000,
    part="one entry or top-level key",
    max_list_items=MAX_BATCH_ENTRIES,
    fix="split the queries into several batch files",
)


class BatchError(ValueError):
    """The batch file as a whole is unusable; the message names the file and the fix."""


@dataclass(frozen=True)
class FileEntry:
    """One query of the batch file, checked, with the spider arguments it runs with."""

    position: int
    query: str
    spider_args: Mapping[str, str]
    cache_key: str | None


@dataclass(frozen=True)
class RejectedEntry:
    position: int
    query: str
    # What is wrong with it and the fix; `message` says where too.
    problem: str
    filename: str

    @property
    def message(self) -> str:
        return f"{self.filename}: entry {self.position}: {self.problem}"


@dataclass(frozen=True)
class Batch:
    entries: list[FileEntry]
    rejected: list[RejectedEntry]
    # Identifies the file's content: running the same file again continues its batch.
    content_hash: str


def load_batch(path: str | Path, config: LyraConfig) -> Batch:
    try:
        text = read_text(path, BATCH_LIMITS)
    except OSError as exc:
        raise BatchError(f"{path}: cannot be read ({exc}): give the path of a batch file") from None
    except YamlRefused as exc:
        raise BatchError(f"{path}: {exc}") from None
    return parse_batch(text, config, filename=str(path))


def parse_batch(text: str, config: LyraConfig, *, filename: str = "batch file") -> Batch:
    try:
        doc = load_yaml(text, BATCH_LIMITS)
    except YamlRefused as exc:
        raise BatchError(f"{filename}: {exc}") from None
    try:
        document = _document_schema().validate_python(doc)
    except ValidationError as error:
        raise BatchError(f"{filename}: {said(error)}") from None
    defaults = document.defaults.spider_args()
    entries: list[FileEntry] = []
    rejected: list[RejectedEntry] = []
    for position, node in enumerate(document.queries, start=1):
        try:
            entries.append(_entry(position, node, defaults, config))
        except ArgumentError as exc:
            rejected.append(RejectedEntry(position, _query_text(node), str(exc), filename))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Batch(entries=entries, rejected=rejected, content_hash=digest)


def _single(raw: Any) -> str | None:
    if isinstance(raw, Mapping | list):
        raise problem(f"must be a single value (got {show(raw)})")
    return None if raw is None else str(raw)


def _names(raw: Any) -> str | None:
    if raw is None:
        return None
    names = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        raise problem(f"must be a list of names (got {show(raw)})")
    return ",".join(name.strip() for name in names)


# An option as the text of its spider argument; left empty (null), not given.
Option = Annotated[str | None, PlainValidator(_single)]


@dataclass(frozen=True)
class EntryOptions:
    """What the defaults and each entry may set: spider arguments, as the text `-a` would give."""

    engine: Option = None
    serp_max_pages: Option = None
    strategy: Option = None
    # A list in YAML (or one comma-separated text), comma-separated as an argument.
    sources: Annotated[str | None, PlainValidator(_names)] = None
    time_range: Option = None
    task_id: Option = None
    novelty_scope: Option = None
    citation_depth: Option = None
    citation_top_k: Option = None

    def spider_args(self) -> dict[str, str]:
        return {name: value for name, value in asdict(self).items() if value is not None}


BATCH_OPTIONS = tuple(option.name for option in fields(EntryOptions))


def _unknown_options(node: Mapping[Any, Any], known: Sequence[str] = BATCH_OPTIONS) -> None:
    unknown = [name for name in node if name not in known]
    if unknown:
        raise problem(f": unknown option {show(unknown[0])}: use one of {', '.join(BATCH_OPTIONS)}")


def _options(node: Any) -> Any:
    if not isinstance(node, Mapping):
        raise problem(f"must be a mapping of options (got {show(node)})")
    _unknown_options(node)
    return node


def _document(doc: Any) -> Any:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("queries"), list):
        raise problem("expected a mapping with a 'queries:' list")
    unknown = [key for key in doc if key not in ("defaults", "queries")]
    if unknown:
        raise problem(f"unknown key {show(unknown[0])}: use defaults and queries")
    return doc


@dataclass(frozen=True)
class BatchDocument:
    """A batch file as YAML reads it."""

    # Each read alone (Entry), so that a bad one is rejected and the rest run.
    queries: Annotated[list[Any], SkipValidation]
    defaults: Annotated[EntryOptions, BeforeValidator(_options), null_as({})] = EntryOptions()


@cache
def _document_schema() -> TypeAdapter[BatchDocument]:
    # Built on first use, as _entry_schema: every scrapy command imports this module (Scrapy
    # loads them all to list them), and only `scrapy batch` reads a batch file.
    return TypeAdapter(Annotated[BatchDocument, BeforeValidator(_document)])


def _entry_node(node: Any) -> Any:
    """An entry as a mapping: a query text is the query alone."""
    if node is None or isinstance(node, str):
        return {"query": node}
    if not isinstance(node, Mapping):
        raise problem(
            f"an entry is a query text or a mapping with 'query' (got {show(node)}): "
            "quote a query YAML reads as a number, a date or true/false"
        )
    _unknown_options(node, ("query", *BATCH_OPTIONS))
    query = node.get("query")
    if query is not None and not isinstance(query, str):
        raise problem(f"must be text (got {show(query)}): put it in quotes", "query")
    return node


@dataclass(frozen=True, kw_only=True)
class Entry(EntryOptions):
    """One entry of a batch file: its query and its options."""

    query: str | None = None


@cache
def _entry_schema() -> TypeAdapter[Entry]:
    return TypeAdapter(Annotated[Entry, BeforeValidator(_entry_node)])


def _query_text(node: Any) -> str:
    query = node.get("query") if isinstance(node, Mapping) else node
    return query if isinstance(query, str) else ""


def _entry(position: int, node: Any, defaults: Mapping[str, str], config: LyraConfig) -> FileEntry:
    entry = validated(_entry_schema(), node)
    spider_args = {**defaults, **entry.spider_args(), "query": entry.query or ""}
    arguments = parse_crawl_arguments(spider_args, config)
    return FileEntry(
        position=position,
        query=arguments.query,
        spider_args=spider_args,
        cache_key=entry_cache_key(arguments),
    )


def entry_cache_key(arguments: CrawlArguments) -> str | None:
    """The entry's cache key, or None when its SERP engine is chosen at crawl time."""
    if SERP_SOURCE in arguments.sources and arguments.engine is None:
        return None
    return cache_key(
        normalize_query(arguments.query),
        crawl_sources(arguments.engine, arguments.sources),
        arguments.time_range,
        arguments.serp_max_pages,
    )


def entry_specs(batch: Batch) -> list[EntrySpec]:
    """The batch's entries as the store records them, rejected ones with their problem (the
    entry's row says which entry of which batch it is)."""
    specs = [EntrySpec(e.position, e.query, dict(e.spider_args)) for e in batch.entries]
    specs += [EntrySpec(r.position, r.query, {}, rejected=r.problem) for r in batch.rejected]
    return sorted(specs, key=lambda spec: spec.position)


def entry_status(entry: StoredEntry) -> str:
    """How an entry ended, in the summary's words: finished, cached, failed, rejected, or
    not run (still pending or running: the batch was stopped before it)."""
    if entry.state == "done":
        return "cached" if entry.detail == CACHED else "finished"
    if entry.state in ("failed", "rejected"):
        return entry.state
    return "not run"


# The states of entries that did not succeed: they ended badly, or never ran to the end.
UNSUCCESSFUL_STATES = ("failed", "rejected", "pending", "running")


@dataclass(frozen=True)
class BatchEnd:
    """How a batch ended, as `scrapy batch` reports it: its entries counted by status
    (entry_status's words) and the entries it lists: every entry of a batch of at most
    SUMMARY_ENTRIES, else the first of those that did not succeed (`unsuccessful` in all)."""

    counts: Mapping[str, int]
    listed: Sequence[StoredEntry]
    unsuccessful: int

    @classmethod
    def of(cls, entries: Sequence[StoredEntry]) -> BatchEnd:
        """A batch's end from all its entries."""
        ordered = sorted(entries, key=lambda e: e.position)
        statuses = [entry_status(entry) for entry in ordered]
        unsuccessful = [
            entry
            for entry, status in zip(ordered, statuses, strict=True)
            if status not in SUCCEEDED
        ]
        listed = ordered if len(ordered) <= SUMMARY_ENTRIES else unsuccessful[:SUMMARY_ENTRIES]
        return cls(Counter(statuses), listed, len(unsuccessful))

    @classmethod
    def counted(
        cls, progress: BatchProgress, unsuccessful: Sequence[StoredEntry], total: int
    ) -> BatchEnd:
        """A large batch's end from the store's counts and the first of its `total` entries in
        UNSUCCESSFUL_STATES, by position: no more of its entries read than it lists."""
        states = progress.entries
        counts = {
            "finished": states.get("done", 0) - progress.cached_entries,
            "cached": progress.cached_entries,
            "failed": states.get("failed", 0),
            "rejected": states.get("rejected", 0),
            "not run": states.get("pending", 0) + states.get("running", 0),
        }
        return cls(counts, unsuccessful[:SUMMARY_ENTRIES], total)

    @property
    def entries(self) -> int:
        return sum(self.counts.values())

    @property
    def all_succeeded(self) -> bool:
        return not self.unsuccessful


def summary_lines(end: BatchEnd, batch_id: int) -> list[str]:
    """What `scrapy batch` prints when the batch ends: each entry's outcome for a batch of at
    most SUMMARY_ENTRIES; else the entries by outcome and those that did not succeed (the
    first SUMMARY_ENTRIES of them), so a 10,000-entry batch ends in a screenful."""
    lines = [_entry_line(entry, entry_status(entry)) for entry in end.listed]
    if end.entries > SUMMARY_ENTRIES:
        counts = end.counts
        lines.insert(
            0, ", ".join(f"{counts[status]} {status}" for status in _STATUSES if counts[status])
        )
        if end.unsuccessful > SUMMARY_ENTRIES:
            lines.append(
                f"… and {end.unsuccessful - SUMMARY_ENTRIES} more that did not succeed"
                f" (each entry's state and why: table batch_entries, batch_id {batch_id})"
            )
    lines.append(f"{end.entries - end.unsuccessful} of {end.entries} entries succeeded")
    return lines


def _entry_line(entry: StoredEntry, status: str) -> str:
    query_id = f"query {entry.query_id}" if entry.query_id is not None else "no query"
    detail = f": {entry.detail}" if entry.detail and entry.detail != CACHED else ""
    return f"entry {entry.position} {show(entry.query_text)}: {status} ({query_id}){detail}"
