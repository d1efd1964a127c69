"""Rows to the typed records, the item columns, instants as text, a batch's figures from grouped
rows: what the SQL store reads back (backends.store). No SQL.

A row is anything indexable by column name (sqlite3.Row, a psycopg dict row). JSON columns come
as text (SQLite) or already decoded (PostgreSQL jsonb); both are read here. The item columns
are derived from StoredItem's fields: a field added to a result reaches the tables through
backends.tables (and a schema version adding the column) alone.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from lyra_crawl.items import ResultItem
from lyra_crawl.politeness.breaker import BreakerState, Health
from lyra_crawl.records import (
    BatchEntry,
    BatchProgress,
    BlockCount,
    CandidateRecord,
    CitationEdge,
    CitationFetch,
    CitationGraph,
    DepthRates,
    FoundPaper,
    Intervention,
    LandingPage,
    Moments,
    PaperToRead,
    SelectionCorpus,
    SelectionRecord,
    StageRun,
    StageScores,
    StaleParser,
    StoredItem,
    StoredPage,
    StoredPaper,
    StoredQuery,
)

R = TypeVar("R")


class Row(Protocol):
    def __getitem__(self, column: str, /) -> Any: ...


@functools.cache
def field_names(record: type) -> tuple[str, ...]:
    return tuple(field.name for field in fields(record))


def values_of(record: type, row: Row) -> dict[str, Any]:
    """The row's columns named as `record`'s fields."""
    return {name: row[name] for name in field_names(record)}


def record_of(record: type[R], row: Row) -> R:
    """A record whose fields are the row's columns of their names, as they are."""
    return record(**values_of(record, row))


# Records read as their rows are, column for field.
stored_page = functools.partial(record_of, StoredPage)
stale_parser = functools.partial(record_of, StaleParser)
citation_fetch = functools.partial(record_of, CitationFetch)
landing_page = functools.partial(record_of, LandingPage)

ITEM_COLUMNS = field_names(StoredItem)
# Written by the store (fetched_at) or by the query's close (paper_id, fused_rank).
ITEM_WRITTEN_BY_STORE = frozenset({"fetched_at", "paper_id", "fused_rank"})
# What an item's insert names; `engine` is always the item's source. The store adds fetched_at.
ITEM_INSERT_COLUMNS = (
    *(column for column in ITEM_COLUMNS if column not in ITEM_WRITTEN_BY_STORE),
    "engine",
)
# Columns holding JSON lists.
JSON_LIST_COLUMNS = frozenset({"authors"})
_JSON = json.JSONDecoder()


def instant(moment: datetime) -> str:
    """The textual form of every timestamp a record carries: UTC, ISO 8601, milliseconds."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def utc_now() -> str:
    return instant(datetime.now(UTC))


# json.dumps(value, sort_keys=True) without building an encoder for each value.
json_text = json.JSONEncoder(sort_keys=True).encode


def item_values(item: ResultItem) -> dict[str, Any]:
    """One item as the values of ITEM_INSERT_COLUMNS, its JSON lists as text."""
    values = {column: getattr(item, column) for column in ITEM_INSERT_COLUMNS[:-1]}
    for column in JSON_LIST_COLUMNS:
        values[column] = json.dumps(list(values[column]))
    values["engine"] = item.source
    return values


def decode_json(value: Any, default: Any) -> Any:
    """A JSON column's value: text is decoded (empty text is `default`), a decoded one kept."""
    if value is None:
        return default
    if not isinstance(value, str):
        return value
    if not value:
        return default
    # The columns hold json.dumps' text, which raw_decode reads whole at a third of json.loads'
    # cost (its two whitespace scans); anything else is json.loads' to read or refuse.
    try:
        decoded, end = _JSON.raw_decode(value)
    except ValueError:
        end = -1
    return decoded if end == len(value) else json.loads(value)


def stored_item(row: Row) -> StoredItem:
    values: dict[str, Any] = {column: row[column] for column in ITEM_COLUMNS}
    values["authors"] = tuple(decode_json(row["authors"], []))
    values["snippet"] = values["snippet"] or ""
    values["kind"] = values["kind"] or "serp"
    values["position"] = values["position"] or 0
    return StoredItem(**values)


QUERY_JSON_COLUMNS: Mapping[str, Any] = {
    "stop_reason": {},
    "errors": {},
    "attribution": None,
    "selection": None,
}


def stored_query(row: Row | None) -> StoredQuery | None:
    if row is None:
        return None
    values = values_of(StoredQuery, row)
    for column, default in QUERY_JSON_COLUMNS.items():
        values[column] = decode_json(row[column], default)
    values["cache_hit"] = bool(row["cache_hit"])
    return StoredQuery(**values)


def stored_paper(row: Row) -> StoredPaper:
    values = values_of(StoredPaper, row)
    values["authors"] = tuple(decode_json(values["authors"], []))
    values["external_ids"] = decode_json(values["external_ids"], {})
    values["sources"] = tuple(decode_json(values["sources"], []))
    values["fetch_urls"] = decode_json(values["fetch_urls"], {})
    return StoredPaper(**values)


def found_papers(papers: Iterable[Row], found_by: Iterable[Row]) -> list[FoundPaper]:
    """Each paper with the queries that found it (FOUND_PAPERS' and FOUND_BY's rows)."""
    queries: dict[int, dict[str, None]] = {}
    ranks: dict[int, int] = {}
    for row in found_by:
        paper_id, rank = row["paper_id"], row["rank"]
        queries.setdefault(paper_id, {})[row["query_text"]] = None
        ranks[paper_id] = min(rank, ranks.get(paper_id, rank))
    return [
        FoundPaper(
            paper := stored_paper(row), tuple(queries.get(paper.id, ())), ranks.get(paper.id)
        )
        for row in papers
    ]


def citation_graph(papers: Iterable[Row], edges: Iterable[Row]) -> CitationGraph:
    return CitationGraph([stored_paper(row) for row in papers], [citation_edge(r) for r in edges])


# The columns of a `citation_fetches` row a store writes (fetched_at is the store's).
CITATION_FETCH_COLUMNS = tuple(c for c in field_names(CitationFetch) if c != "fetched_at")


def citation_edge(row: Row) -> CitationEdge:
    return CitationEdge(
        row["citing_paper_id"], row["cited_paper_id"], row["source"], row["fetched_at"]
    )


def paper_to_read(row: Row) -> PaperToRead:
    values = values_of(PaperToRead, row)
    values["fetch_urls"] = decode_json(row["fetch_urls"], {})
    return PaperToRead(**values)


def intervention(row: Row) -> Intervention:
    values = values_of(Intervention, row)
    values["detail"] = values["detail"] or ""
    return Intervention(**values)


def batch_entry(row: Row) -> BatchEntry:
    values = values_of(BatchEntry, row)
    values["arguments"] = decode_json(row["arguments"], {})
    return BatchEntry(**values)


def health(engine: str, row: Row | None) -> Health:
    if row is None:
        return Health(engine=engine)
    values = values_of(Health, row)
    values["state"] = BreakerState(values["state"])
    return Health(**values)


# -- selections --------------------------------------------------------------------------------

# A `selections` row's columns: the record's but its candidates (rows of their own) and id.
SELECTION_COLUMNS = tuple(c for c in field_names(SelectionRecord) if c not in ("candidates", "id"))
SCORE_COLUMNS = field_names(StageScores)
CANDIDATE_COLUMNS = (
    "selection_id",
    "position",
    "document_id",
    "paper_id",
    "chunk_index",
    *SCORE_COLUMNS,
    "final_rank",
)


def selection_values(record: SelectionRecord) -> dict[str, Any]:
    values = {column: getattr(record, column) for column in SELECTION_COLUMNS}
    for column in ("facets_named", "facets_carried"):
        values[column] = json_text(list(values[column]))
    values["stages"] = json_text([asdict(stage) for stage in record.stages])
    values["corpus"] = json_text(asdict(record.corpus))
    return values


def candidate_values(selection_id: int, record: SelectionRecord) -> list[dict[str, Any]]:
    return [
        {
            "selection_id": selection_id,
            "position": position,
            "document_id": candidate.document_id,
            "candidate_paper": candidate.paper_id,
            "chunk_index": candidate.chunk_index,
            **asdict(candidate.scores),
            "final_rank": candidate.final_rank,
        }
        for position, candidate in enumerate(record.candidates, start=1)
    ]


def selection_record(row: Row, candidates: Iterable[Row]) -> SelectionRecord:
    corpus = decode_json(row["corpus"], {})
    return SelectionRecord(
        id=row["id"],
        question=row["question"],
        conversation=row["conversation"],
        search_text=row["search_text"],
        facets_named=tuple(decode_json(row["facets_named"], [])),
        facets_carried=tuple(decode_json(row["facets_carried"], [])),
        facet_note=row["facet_note"],
        documents_kept=row["documents_kept"],
        documents_total=row["documents_total"],
        stages=tuple(StageRun(**stage) for stage in decode_json(row["stages"], [])),
        candidates=tuple(
            CandidateRecord(
                document_id=c["document_id"],
                chunk_index=c["chunk_index"],
                scores=StageScores(**{column: c[column] for column in SCORE_COLUMNS}),
                final_rank=c["final_rank"],
                paper_id=c["paper_id"],
            )
            for c in candidates
        ),
        reason=row["reason"],
        corpus=SelectionCorpus(**{**corpus, "query_ids": tuple(corpus.get("query_ids", ()))}),
        corpus_version=row["corpus_version"],
        selected_at=row["selected_at"],
    )


# -- batch figures ---------------------------------------------------------------------------


def batch_progress(
    batch_id: int,
    *,
    entry_states: Iterable[Sequence[Any]],
    cached_entries: int,
    pages: Iterable[Sequence[Any]],
    blocks: Iterable[BlockCount],
    queries: int,
    rate_waits: Iterable[Sequence[Any]],
) -> BatchProgress:
    """A batch's figures from its grouped rows.

    `entry_states`: (state, entries, first started_at, last finished_at) per entry state;
    `pages`: (entry state, source, cache hit, pages, items stored) per group of pages;
    `rate_waits`: (engine, waits) summed over the batch's crawls.
    """
    entries: dict[str, int] = {}
    started: list[str] = []
    finished: list[str] = []
    for state, n, first, last in entry_states:
        entries[state] = n
        started += [first] if first else []
        finished += [last] if last else []
    requests: dict[str, int] = {}
    finished_pages: dict[str, int] = {}
    running_pages: dict[str, int] = {}
    replayed = items = 0
    for state, source, cache_hit, count, stored in pages:
        items += stored
        if cache_hit:
            replayed += count
            continue
        requests[source] = requests.get(source, 0) + count
        if state in ("done", "failed"):
            finished_pages[source] = finished_pages.get(source, 0) + count
        elif state == "running":
            running_pages[source] = running_pages.get(source, 0) + count
    blocked: dict[str, int] = {}
    for block in blocks:
        blocked[block.engine] = blocked.get(block.engine, 0) + block.pages
    return BatchProgress(
        batch_id=batch_id,
        entries=entries,
        cached_entries=cached_entries,
        queries=queries,
        requests=dict(sorted(requests.items())),
        replayed_pages=replayed,
        items=items,
        blocks=blocked,
        finished_pages=finished_pages,
        running_pages=running_pages,
        rate_waits={engine: int(waits) for engine, waits in rate_waits},
        started_at=min(started, default=None),
        finished_at=max(finished, default=None),
    )


def depth_rates(found: Iterable[Sequence[Any]]) -> list[DepthRates]:
    """DepthRates from rows of (source, page number, pages, then count, sum and sum of squares
    of novelty, then of harvest)."""
    return [
        DepthRates(
            source,
            page_number,
            pages,
            Moments(n_novelty, novelty or 0.0, novelty_sq or 0.0),
            Moments(n_harvest, harvest or 0.0, harvest_sq or 0.0),
        )
        for (
            source,
            page_number,
            pages,
            n_novelty,
            novelty,
            novelty_sq,
            n_harvest,
            harvest,
            harvest_sq,
        ) in found
    ]
