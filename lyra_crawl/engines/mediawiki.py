"""Wikipedia (`action=query&list=search`) and Wikidata (`wbsearchentities`) JSON APIs.

Wikipedia's language is its subdomain, so result URLs are built on the host that answered.
Responses of `generator=search` (pages keyed by `index`) are read too: some clients ask that way.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

import lxml.html

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, load_json
from lyra_crawl.engines.request import expected_host


def _text(fragment: str) -> str:
    """Plain text of an HTML snippet (search matches come wrapped in spans)."""
    if not fragment.strip():
        return ""
    return " ".join(
        lxml.html.fragment_fromstring(fragment, create_parent="div").text_content().split()
    )


def _api_document(body: bytes) -> tuple[dict, str]:
    """The decoded answer, and the API's error message ('' when there is none)."""
    try:
        doc = load_json(body)
    except ValueError as exc:
        return {}, str(exc)
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
        rows = sorted(query.get("pages") or (), key=lambda page: page.get("index", 0))
    results = []
    for row in rows:
        title = row.get("title") or ""
        if not title:
            continue
        description = (row.get("terms") or {}).get("description") or [""]
        results.append(
            SerpResult(
                url=f"https://{host}/wiki/{quote(title.replace(' ', '_'), safe='/:()')}",
                title=title,
                snippet=_text(row.get("snippet") or "") or description[0],
                date=row.get("timestamp"),
            )
        )
    return Extracted(results=tuple(results))


def wikidata(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, error = _api_document(body)
    if error:
        return Extracted(error=error)
    results = []
    for row in doc.get("search") or ():
        link = row.get("url") or row.get("concepturi") or ""
        if link.startswith("//"):
            link = "https:" + link
        title = row.get("label") or row.get("id") or ""
        if link and title:
            results.append(SerpResult(url=link, title=title, snippet=row.get("description", "")))
    return Extracted(results=tuple(results))
