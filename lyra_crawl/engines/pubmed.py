"""PubMed through NCBI E-utilities: two requests per page.

esearch (XML, paged by `retstart` / `retmax`) lists PMIDs only; the page is completed by an
esummary request (JSON) for those ids, which gives titles, dates and DOIs. The parser tells the
two apart by their bodies, so the spider treats both as one page.
"""

from __future__ import annotations

from lxml import etree

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, leading_year, load_json
from lyra_crawl.engines.request import build_follow_up
from lyra_crawl.identifiers import normalize_doi

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


def article_url(pmid: str) -> str:
    return f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    if body.lstrip().startswith(b"{"):
        return _summaries(body)
    return _search(spec, body)


def _search(spec: EngineSpec, body: bytes) -> Extracted:
    """An esearch page: its ids, as results awaiting their summaries."""
    try:
        root = etree.fromstring(body, parser=_PARSER)
    except etree.XMLSyntaxError as exc:
        return Extracted(error=f"body is neither esearch XML nor esummary JSON ({exc})")
    if root.tag != "eSearchResult":
        return Extracted(error=f"expected eSearchResult, got <{root.tag}>")
    error = root.findtext("ERROR")
    if error:
        return Extracted(error=f"esearch error: {error}")
    ids = [text.strip() for text in root.xpath("IdList/Id/text()") if text.strip()]
    start = (root.findtext("RetStart") or "").strip()
    shown = int(start) // spec.results_per_page + 1 if start.isdigit() else None
    return Extracted(
        results=tuple(SerpResult(url=article_url(pmid), title="", pmid=pmid) for pmid in ids),
        shown_page=shown,
        follow_up=build_follow_up(spec, ids) if ids else None,
    )


def _summaries(body: bytes) -> Extracted:
    """An esummary answer: one complete result per id, in the order esearch gave them."""
    try:
        doc = load_json(body)
    except ValueError as exc:
        return Extracted(error=str(exc))
    if "error" in doc:
        return Extracted(error=f"esummary error: {doc['error']}")
    summaries = doc.get("result") or {}
    results = []
    for pmid in summaries.get("uids") or ():
        record = summaries.get(pmid) or {}
        ids = {a.get("idtype"): a.get("value") for a in record.get("articleids") or ()}
        title = " ".join((record.get("title") or "").split())
        if not title:
            continue
        venue = record.get("fulljournalname") or record.get("source") or ""
        results.append(
            SerpResult(
                url=article_url(pmid),
                title=title,
                snippet=venue,
                date=record.get("pubdate") or None,
                doi=normalize_doi(ids.get("doi")),
                pmid=pmid,
                authors=tuple(
                    author["name"]
                    for author in record.get("authors") or ()
                    if author.get("name") and author.get("authtype", "Author") == "Author"
                ),
                year=leading_year(record.get("pubdate")),
                venue=venue or None,
                source_id=pmid,
            )
        )
    return Extracted(results=tuple(results))
