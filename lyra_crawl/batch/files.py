"""Batch files: many queries with per-query options over batch defaults. Pure.

A batch file is YAML (see config/batch.example.yaml):

    defaults: {engine: mojeek, serp_max_pages: 3}
    queries:
      - climate adaptation                # a plain query takes the defaults
      - query: sea level rise
        engine: duckduckgo
        task_id: coasts

Each entry is checked with the spider's own argument rules (arguments.parse_crawl_arguments),
which ask every engine it goes to whether it can take it. A bad entry is rejected with its
position and the rest still run; a file that is not a batch at all raises BatchError, as does
one past BATCH_LIMITS (config.bounded_yaml: size, entries, values, nesting, aliases).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lyra_crawl.backends.records import BatchEntry as StoredEntry
from lyra_crawl.backends.records import BatchProgress, EntrySpec
from lyra_crawl.config import LyraConfig
from lyra_crawl.config.bounded_yaml import YamlLimits, YamlRefused, load_yaml, read_text
from lyra_crawl.query.arguments import (
    SERP_SOURCE,
    ArgumentError,
    CrawlArguments,
    crawl_sources,
    parse_crawl_arguments,
)
from lyra_crawl.query.cache_key import cache_key
from lyra_crawl.query.text import normalize_query
from lyra_crawl.quoting import show

BATCH_OPTIONS = (
    "engine",
    "serp_max_pages",
    "strategy",
    "sources",
    "time_range",
    "task_id",
    "novelty_scope",
    "citation_depth",
    "citation_top_k",
)
# Options that are lists in YAML and comma-separated in a spider argument.
LIST_OPTIONS = frozenset({"sources"})
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
    if not isinstance(doc, Mapping) or not isinstance(doc.get("queries"), list):
        raise BatchError(f"{filename}: expected a mapping with a 'queries:' list")
    unknown = [key for key in doc if key not in ("defaults", "queries")]
    if unknown:
        raise BatchError(f"{filename}: unknown key {show(unknown[0])}: use defaults and queries")
    defaults = doc.get("defaults")
    try:
        defaults = _options({} if defaults is None else defaults, "defaults")
    except ArgumentError as exc:
        raise BatchError(f"{filename}: {exc}") from None
    entries: list[FileEntry] = []
    rejected: list[RejectedEntry] = []
    for position, node in enumerate(doc["queries"], start=1):
        try:
            entries.append(_entry(position, node, defaults, config))
        except ArgumentError as exc:
            rejected.append(RejectedEntry(position, _query_text(node), str(exc), filename))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Batch(entries=entries, rejected=rejected, content_hash=digest)


def _options(node: Any, where: str) -> dict[str, str]:
    """Batch options as spider-argument strings; lists become comma-separated."""
    if not isinstance(node, Mapping):
        raise ArgumentError(f"{where} must be a mapping of options (got {show(node)})")
    unknown = [name for name in node if name not in BATCH_OPTIONS]
    if unknown:
        raise ArgumentError(
            f"unknown option {show(unknown[0])} in {where}: use one of {', '.join(BATCH_OPTIONS)}"
        )
    options = {}
    for name, value in node.items():
        if value is None:
            continue
        if name in LIST_OPTIONS:
            if isinstance(value, str):
                value = value.split(",")
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise ArgumentError(f"{name} must be a list of names (got {show(value)})")
            value = ",".join(v.strip() for v in value)
        elif isinstance(value, Mapping | list):
            raise ArgumentError(f"{name} must be a single value (got {show(value)})")
        options[name] = str(value)
    return options


def _query_text(node: Any) -> str:
    query = node.get("query") if isinstance(node, Mapping) else node
    return query if isinstance(query, str) else ""


def _entry(position: int, node: Any, defaults: Mapping[str, str], config: LyraConfig) -> FileEntry:
    if node is None or isinstance(node, str):
        node = {"query": node}
    if not isinstance(node, Mapping):
        raise ArgumentError(
            f"an entry is a query text or a mapping with 'query' (got {show(node)}): "
            "quote a query YAML reads as a number, a date or true/false"
        )
    fields = dict(node)
    query = fields.pop("query", None)
    if query is not None and not isinstance(query, str):
        raise ArgumentError(f"query must be text (got {show(query)}): put it in quotes")
    spider_args = {**defaults, **_options(fields, "this entry")}
    spider_args["query"] = query or ""
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
