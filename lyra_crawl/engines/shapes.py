"""What an API answered when it is not the shape its parser reads: what `layout_changed` says.

A JSON/XML hook that meets another module's answer (Wikipedia's list=prefixsearch, an S2 author
search, a Crossref member list) must say so instead of returning 0 or 1 results: it names the
path it expected and what the body holds instead, e.g. "expected query.search or query.pages (a
list); the body has batchcomplete, query.prefixsearch". Pure.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from lyra_crawl.engines.base import Extracted

# Enough keys to recognise a module's answer without flooding the detail.
MAX_KEYS_SHOWN = 8


def layout_changed(expected: str, found: str) -> Extracted:
    """The page of a shape the parser does not read: what it expected and what the body holds."""
    return Extracted(layout_changed=f"expected {expected}; {found}")


def json_document(body: bytes, expected: str) -> tuple[dict[str, Any], Extracted | None]:
    """The JSON object an API answered, or why the page is not one (an error or another shape).

    A body that does not decode is an error (a cut-off answer says nothing about the shape);
    markup, or JSON that is not an object, is another shape than the one the parser reads.
    """
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        if body.lstrip()[:1] == b"<":
            return {}, layout_changed(expected, f"the body is markup, not JSON ({_head(body)})")
        return {}, Extracted(error=f"body is not JSON ({exc})")
    if not isinstance(doc, dict):
        return {}, layout_changed(expected, f"the body is {describe(doc)}")
    return doc, None


def describe(value: Any) -> str:
    """A short description of a JSON value's shape: its keys one level deep, or its type."""
    if isinstance(value, dict):
        return "an object with " + (key_paths(value) or "no keys")
    if isinstance(value, list):
        return f"a JSON list of {len(value)}"
    return f"a JSON {type(value).__name__}"


def key_paths(doc: dict[str, Any]) -> str:
    """The object's keys, with those of nested objects as `outer.inner` (one level deep)."""
    paths = []
    for key, value in doc.items():
        if isinstance(value, dict) and value:
            paths.extend(f"{key}.{inner}" for inner in value)
        else:
            paths.append(key)
    hidden = len(paths) - MAX_KEYS_SHOWN
    return ", ".join(paths[:MAX_KEYS_SHOWN]) + (f" (+{hidden} more)" if hidden > 0 else "")


def foreign_records(records: Sequence[Any], required: Collection[str]) -> str:
    """'' when some record has every `required` key, else what the records hold instead.

    Judged on keys, not values: a record whose title is null is still a record of the shape
    the parser reads (dropped as untitled); records without the key at all are not.
    """
    objects = [record for record in records if isinstance(record, dict)]
    if not records or any(all(key in record for key in required) for record in objects):
        return ""
    if not objects:
        return f"the records are not objects ({describe(records[0])})"
    keys = dict.fromkeys(key for record in objects for key in record)
    return "the records have " + (", ".join(list(keys)[:MAX_KEYS_SHOWN]) or "no keys")


def _head(body: bytes) -> str:
    return " ".join(body.lstrip()[:60].decode("utf-8", "replace").split())
