"""Wikipedia (`action=query&list=search`) and Wikidata (`wbsearchentities`) JSON APIs.

Wikipedia's language is its subdomain, so result URLs are built on the host that answered.
Responses of `generator=search` (pages keyed by `index`) are read too: some clients ask that way.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

import lxml.html

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, json_object, record_results
from lyra_crawl.engines.request import expected_host


def _text(fragment: str) -> str:
    """Plain text of an HTML snippet (search matches come wrapped in spans)."""
    if not fragment.strip():
        return ""
    return " ".join(
        lxml.html.fragment_fromstring(fragment, create_parent="div").text_content().split()
    )


def _api_document(body: bytes) -> tuple[dict[str, Any], str]:
    """The decoded answer, and the API's error message ('' when there is none)."""
    doc, problem = json_object(body)
    if problem:
        return doc, problem
    error = doc.get("error")
    return doc, f"{error.get('code')}: {error.get('info')}" if isinstance(error, dict) else ""


def wikipedia(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, error = _api_document(body)
    if error:
        return Extracted(error=error)
    host = urlsplit(url).hostname or ""
    if not host.endswith(".wikipedia.org"):
        host = expected_host(spec)
    query = doc.get("query") or {}
    if "search" in query:
        rows = query["search"]
    else:
        pages = [page for page in query.get("pages") or () if isinstance(page, dict)]
        rows = sorted(pages, key=lambda page: page.get("index", 0))

    def article(row: dict[str, Any]) -> SerpResult | None:
        title = row.get("title") or ""
        if not title:
            return None
        description = (row.get("terms") or {}).get("description") or [""]
        return SerpResult(
            url=f"https://{host}/wiki/{quote(title.replace(' ', '_'), safe='/:()')}",
            title=title,
            snippet=_text(row.get("snippet") or "") or description[0],
            date=row.get("timestamp"),
        )

    results, dropped = record_results(rows, article)
    return Extracted(results=results, dropped=dropped)


def wikidata(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, error = _api_document(body)
    if error:
        return Extracted(error=error)
    results, dropped = record_results(doc.get("search"), _entity)
    return Extracted(results=results, dropped=dropped)


def _entity(row: dict[str, Any]) -> SerpResult | None:
    link = row.get("url") or row.get("concepturi") or ""
    if link.startswith("//"):
        link = "https:" + link
    title = row.get("label") or row.get("id") or ""
    if not (link and title):
        return None
    return SerpResult(url=link, title=title, snippet=row.get("description", ""))
