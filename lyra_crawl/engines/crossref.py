"""Crossref REST API works query (api.crossref.org/works?query=): JSON, paged by `offset`.

Docs: https://api.crossref.org/swagger-ui/index.html. `offset` stops at 10,000 (deeper needs
cursors; max_results_window in the spec). Quirks seen 2026-04 in the captured responses:
- `title` and `container-title` are lists (usually of one), and either may be missing;
- `issued.date-parts` is `[[null]]` when the work has no date;
- authors are `given` + `family`, or only `name` for an organisation;
- `abstract` is JATS XML (`<jats:p>`, often led by a `<jats:title>Abstract</jats:title>`).
A bad parameter is HTTP 400 with `status: failed` and a list of messages (a bad cursor: 404,
`resource-failure`). A single work (`/works/{doi}`, message-type `work`) is read as a page of
one, like OpenAlex's; any other message-type (member-list, funder-list, prefix…) is
`layout_changed` (seen 2026-06).
"""

from __future__ import annotations

from typing import Any

import lxml.html

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, record_results
from lyra_crawl.engines.shapes import foreign_records, json_document, key_paths, layout_changed
from lyra_crawl.papers.identifiers import normalize_doi

SHAPE = "message-type work-list with message.items (or a single work)"


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = json_document(body, SHAPE)
    if problem is not None:
        return problem
    message = doc.get("message")
    if "status" not in doc:
        return layout_changed(SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
    if doc["status"] != "ok" or not isinstance(message, dict):
        return Extracted(error=f"Crossref error: {_failure(message)}")
    kind = doc.get("message-type")
    if kind == "work":
        results, dropped = record_results([message], _result)
        return Extracted(results=results, dropped=dropped)
    if kind != "work-list":
        return layout_changed(SHAPE, f"the body is message-type {kind}")
    items = message.get("items")
    if not isinstance(items, list):
        return layout_changed(SHAPE, f"the body has {key_paths(doc)}")
    foreign = foreign_records(items, ("DOI",))
    if foreign:
        return layout_changed(SHAPE, f"message.items: {foreign}")
    results, dropped = record_results(items, _result)
    start = (message.get("query") or {}).get("start-index")
    shown = start // spec.results_per_page + 1 if isinstance(start, int) else None
    return Extracted(results=results, shown_page=shown, dropped=dropped)


def _failure(message: Any) -> str:
    """Crossref's validation messages, one line."""
    if not isinstance(message, list):
        return str(message)
    return "; ".join(str(m.get("message", m) if isinstance(m, dict) else m) for m in message)


def jats_text(abstract: str | None) -> str | None:
    """Plain text of a JATS abstract, without its leading 'Abstract' heading."""
    if not abstract or not abstract.strip():
        return None
    root = lxml.html.fragment_fromstring(abstract, create_parent="div")
    for heading in root.xpath("./*[local-name()='jats:title' or local-name()='title']"):
        heading.drop_tree()
    return " ".join(root.text_content().split()) or None


def _first(values: Any) -> str:
    return " ".join(str(values[0]).split()) if isinstance(values, list) and values else ""


def _result(item: dict[str, Any]) -> SerpResult | None:
    doi = normalize_doi(item.get("DOI"))
    title = _first(item.get("title"))
    if not title or not doi:
        return None
    date_parts = (item.get("issued") or {}).get("date-parts") or [[None]]
    year = date_parts[0][0] if date_parts[0] else None
    abstract = jats_text(item.get("abstract"))
    return SerpResult(
        url=item.get("URL") or f"https://doi.org/{doi}",
        title=title,
        snippet=abstract or "",
        doi=doi,
        authors=tuple(
            name
            for author in item.get("author") or ()
            if (
                name := " ".join(filter(None, (author.get("given"), author.get("family"))))
                or author.get("name")
            )
        ),
        year=year if isinstance(year, int) else None,
        venue=_first(item.get("container-title")) or None,
        abstract=abstract,
        source_id=doi,
    )
