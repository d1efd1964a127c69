"""Wikipedia (`action=query&list=search`) and Wikidata (`wbsearchentities`) JSON APIs.

Wikipedia's language is its subdomain, so result URLs are built on the host that answered.
Generator answers (`generator=search`, `generator=prefixsearch`: pages ranked by `index`, a
list in formatversion 2, an object keyed by page id in 1) are read too: some clients ask that
way, and a generator's pages are the answer even beside a one-row list=search (the Android app
asks for a suggestion so). A generator that finds nothing leaves `query` out altogether.
Answers of other modules (list=prefixsearch, geosearch, the REST API's `pages`) are
`layout_changed`, never 0 or 1 result.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

import lxml.html

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, Outcome, SerpResult, record_results
from lyra_crawl.engines.request import expected_host
from lyra_crawl.engines.shapes import foreign_records, json_document, key_paths, layout_changed

WIKIPEDIA_SHAPE = "query.search, or query.pages ranked by index (a search generator)"
WIKIDATA_SHAPE = "search (a list, from wbsearchentities)"
# A generator's page carries its rank; pages of prop=…&titles= or geosearch do not.
RANKED_PAGE = ("title", "index")
MAXLAG = "maxlag"


def _text(fragment: str) -> str:
    """Plain text of an HTML snippet (search matches come wrapped in spans)."""
    if not fragment.strip():
        return ""
    return " ".join(
        lxml.html.fragment_fromstring(fragment, create_parent="div").text_content().split()
    )


def _api_document(body: bytes, expected: str) -> tuple[dict[str, Any], Extracted | None]:
    """The decoded answer, or the page it makes when it is the API's error or no object.

    A `maxlag` error (the request's maxlag was exceeded: the replicas lag) asks the client to
    wait and come back, as a 429 does: it is rate_limited, not an error.
    """
    doc, problem = json_document(body, expected)
    if problem is not None:
        return doc, problem
    error = doc.get("error")
    if isinstance(error, dict):
        detail = f"{error.get('code')}: {error.get('info')}"
        if error.get("code") == MAXLAG:
            return doc, Extracted(block=Outcome.RATE_LIMITED, error=detail)
        return doc, Extracted(error=detail)
    return doc, None


def wikipedia(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = _api_document(body, WIKIPEDIA_SHAPE)
    if problem is not None:
        return problem
    rows = _ranked_rows(doc)
    if isinstance(rows, Extracted):
        return rows
    host = urlsplit(url).hostname or ""
    if not host.endswith(".wikipedia.org"):
        host = expected_host(spec)

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


def _ranked_rows(doc: dict[str, Any]) -> list[Any] | Extracted:
    """The answer's articles in rank order, or the page it makes when it has none to read."""
    query = doc.get("query")
    if query is None and "batchcomplete" in doc and "continue" not in doc:
        # A generator that found nothing: MediaWiki leaves `query` out.
        return []
    if not isinstance(query, dict):
        return layout_changed(WIKIPEDIA_SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
    pages = query.get("pages")
    if isinstance(pages, dict):
        pages = list(pages.values())
    if isinstance(pages, list) and not foreign_records(pages, RANKED_PAGE):
        return sorted(
            (page for page in pages if isinstance(page, dict)),
            key=lambda page: page.get("index", 0),
        )
    rows = query.get("search")
    if isinstance(rows, list):
        foreign = foreign_records(rows, ("title",))
        return layout_changed(WIKIPEDIA_SHAPE, f"query.search: {foreign}") if foreign else rows
    if isinstance(pages, list):
        unranked = foreign_records(pages, RANKED_PAGE)
        return layout_changed(WIKIPEDIA_SHAPE, f"query.pages are not ranked: {unranked}")
    return layout_changed(WIKIPEDIA_SHAPE, f"the body has {key_paths(doc)}")


def wikidata(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = _api_document(body, WIKIDATA_SHAPE)
    if problem is not None:
        return problem
    rows = doc.get("search")
    if not isinstance(rows, list):
        return layout_changed(WIKIDATA_SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
    foreign = foreign_records(rows, ("id",))
    if foreign:
        return layout_changed(WIKIDATA_SHAPE, f"search: {foreign}")
    results, dropped = record_results(rows, _entity)
    return Extracted(results=results, dropped=dropped)


def _entity(row: dict[str, Any]) -> SerpResult | None:
    link = row.get("url") or row.get("concepturi") or ""
    if link.startswith("//"):
        link = "https:" + link
    title = row.get("label") or row.get("id") or ""
    if not (link and title):
        return None
    return SerpResult(url=link, title=title, snippet=row.get("description", ""))
