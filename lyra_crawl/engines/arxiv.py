"""arXiv API (export.arxiv.org/api/query): an Atom feed paged by `start` / `max_results`.

Ids are kept without their version (2202.12139v1 -> 2202.12139), so every version of a paper
is one result. A bad query answers HTTP 400 with a feed of one entry titled "Error" whose id
points into /api/errors (seen 2026-04): that is an error, not a result. A search without
hits is a feed with `opensearch:totalResults` and no entry. Any other XML (OAI-PMH, RSS) or a
feed whose entries are not arXiv abstracts (the listing feeds' `oai:arXiv.org:…` ids) is
`layout_changed`.
"""

from __future__ import annotations

import re

from lxml import etree

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, leading_year, whole_number
from lyra_crawl.engines.shapes import layout_changed
from lyra_crawl.papers.identifiers import normalize_doi

NS = {
    "atom": "http://www.w3.org/2005/Atom",
    "arxiv": "http://arxiv.org/schemas/atom",
    "opensearch": "http://a9.com/-/spec/opensearch/1.1/",
}
_ABS_RE = re.compile(r"arxiv\.org/abs/(?P<id>.+?)(?:v\d+)?$")
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True)
FEED_TAG = f"{{{NS['atom']}}}feed"
SHAPE = "an Atom <feed> of entries with ids at arxiv.org/abs/ (or opensearch:totalResults)"


def _text(entry: etree._Element, path: str) -> str:
    return " ".join(entry.findtext(path, default="", namespaces=NS).split())


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    try:
        feed = etree.fromstring(body, parser=_PARSER)
    except etree.XMLSyntaxError as exc:
        return Extracted(error=f"body is not an Atom feed ({exc})")
    if feed.tag != FEED_TAG:
        return layout_changed(SHAPE, f"the body is <{etree.QName(feed).localname}>")
    entries = feed.findall("atom:entry", NS)
    if not entries and feed.find("opensearch:totalResults", NS) is None:
        return layout_changed(SHAPE, "the feed has no entry and no opensearch:totalResults")
    results = []
    for entry in entries:
        entry_id = _text(entry, "atom:id")
        if "/api/errors" in entry_id:
            return Extracted(error=f"arXiv API error: {_text(entry, 'atom:summary')}")
        match = _ABS_RE.search(entry_id)
        if match is None:
            continue
        arxiv_id = match.group("id")
        published = _text(entry, "atom:published") or None
        summary = _text(entry, "atom:summary")
        results.append(
            SerpResult(
                url=f"https://arxiv.org/abs/{arxiv_id}",
                title=_text(entry, "atom:title"),
                snippet=summary,
                date=published,
                doi=normalize_doi(_text(entry, "arxiv:doi")),
                arxiv_id=arxiv_id,
                authors=tuple(
                    " ".join(name.split())
                    for name in entry.xpath("atom:author/atom:name/text()", namespaces=NS)
                    if name.strip()
                ),
                year=leading_year(published),
                # The journal a preprint later appeared in, when its authors said so.
                venue=_text(entry, "arxiv:journal_ref") or None,
                abstract=summary or None,
                source_id=arxiv_id,
            )
        )
    if entries and not results:
        return layout_changed(SHAPE, f"the entries have ids like {_text(entries[0], 'atom:id')}")
    start = whole_number(feed.findtext("opensearch:startIndex", namespaces=NS))
    shown = start // spec.results_per_page + 1 if start is not None else None
    return Extracted(results=tuple(results), shown_page=shown)
