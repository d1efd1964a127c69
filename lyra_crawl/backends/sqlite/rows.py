"""SQLite rows to the backends' typed records, and the item columns. JSON columns decoded here.

The item columns are derived from StoredItem's fields: a field added to a result reaches the
table through schema.sql alone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from lyra_crawl.backends.records import (
    BatchEntry,
    Intervention,
    StoredItem,
    StoredPage,
    StoredPaper,
    StoredQuery,
)
from lyra_crawl.items import ResultItem
from lyra_crawl.politeness.breaker import BreakerState, Health

ITEM_COLUMNS = tuple(field.name for field in fields(StoredItem))
# Written by the store, not taken from the item.
ITEM_WRITTEN_BY_STORE = frozenset({"fetched_at", "paper_id", "fused_rank"})
# Columns holding JSON lists, stored as text.
JSON_LIST_COLUMNS = frozenset({"authors"})


def item_row(item: ResultItem, fetched_at: str) -> tuple[Any, ...]:
    """One item as the values of ITEM_COLUMNS, then `engine` (always its source)."""
    values = []
    for column in ITEM_COLUMNS:
        if column == "fetched_at":
            values.append(fetched_at)
        elif column in ITEM_WRITTEN_BY_STORE:
            values.append(None)
        elif column in JSON_LIST_COLUMNS:
            values.append(json.dumps(list(getattr(item, column))))
        else:
            values.append(getattr(item, column))
    values.append(item.source)
    return tuple(values)


def stored_item(row: sqlite3.Row) -> StoredItem:
    values: dict[str, Any] = {column: row[column] for column in ITEM_COLUMNS}
    values["authors"] = tuple(json.loads(row["authors"] or "[]"))
    values["snippet"] = values["snippet"] or ""
    values["kind"] = values["kind"] or "serp"
    values["position"] = values["position"] or 0
    return StoredItem(**values)


def _json(text: str | None, default: Any) -> Any:
    return json.loads(text) if text else default


QUERY_JSON_COLUMNS: Mapping[str, Any] = {
    "stop_reason": {},
    "errors": {},
    "attribution": None,
    "selection": None,
}


def stored_query(row: sqlite3.Row | None) -> StoredQuery | None:
    if row is None:
        return None
    values = {name: row[name] for name in _field_names(StoredQuery)}
    for column, default in QUERY_JSON_COLUMNS.items():
        values[column] = _json(row[column], default)
    values["cache_hit"] = bool(row["cache_hit"])
    return StoredQuery(**values)


def stored_page(row: sqlite3.Row) -> StoredPage:
    return StoredPage(**{name: row[name] for name in _field_names(StoredPage)})


def stored_paper(row: sqlite3.Row) -> StoredPaper:
    values = {name: row[name] for name in _field_names(StoredPaper)}
    values["authors"] = tuple(_json(row["authors"], []))
    values["external_ids"] = _json(row["external_ids"], {})
    values["sources"] = tuple(_json(row["sources"], []))
    return StoredPaper(**values)


def intervention(row: sqlite3.Row) -> Intervention:
    values = {name: row[name] for name in _field_names(Intervention)}
    values["detail"] = values["detail"] or ""
    return Intervention(**values)


def batch_entry(row: sqlite3.Row) -> BatchEntry:
    values = {name: row[name] for name in _field_names(BatchEntry)}
    values["arguments"] = _json(row["arguments"], {})
    return BatchEntry(**values)


def health(engine: str, row: sqlite3.Row | None) -> Health:
    if row is None:
        return Health(engine=engine)
    values = {name: row[name] for name in _field_names(Health)}
    values["state"] = BreakerState(values["state"])
    return Health(**values)


def _field_names(record: type) -> tuple[str, ...]:
    return tuple(field.name for field in fields(record))
