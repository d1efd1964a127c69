"""PubMed through NCBI E-utilities: two requests per page.

esearch (XML, paged by `retstart` / `retmax`) lists PMIDs only; the page is completed by an
esummary request (JSON) for those ids, which gives titles, dates and DOIs. The parser tells the
two apart by their bodies, so the spider treats both as one page. An answer of another
E-utility (esummary or efetch XML, einfo, esearch's JSON) is `layout_changed`; any E-utility's
<ERROR> is an error.
"""

from __future__ import annotations

from typing import Any

from lxml import etree

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import (
    Extracted,
    SerpResult,
    leading_year,
    record_results,
    whole_number,
)
from lyra_crawl.engines.request import build_follow_up
from lyra_crawl.engines.shapes import json_document, key_paths, layout_changed
from lyra_crawl.papers.identifiers import normalize_doi

_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
SHAPE = "<eSearchResult> (esearch XML) or result.uids (esummary JSON)"


def article_url(pmid: str) -> str:
    return f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    if body.lstrip()[:1] in (b"{", b"["):
        return _summaries(body)
    return _search(spec, body)


def _search(spec: EngineSpec, body: bytes) -> Extracted:
    """An esearch page: its ids, as results awaiting their summaries."""
    try:
        root = etree.fromstring(body, parser=_PARSER)
    except etree.XMLSyntaxError as exc:
        return Extracted(error=f"body is neither esearch XML nor esummary JSON ({exc})")
    error = root.findtext("ERROR")
    if error:
        return Extracted(error=f"{root.tag} error: {error}")
    if root.tag != "eSearchResult":
        return layout_changed(SHAPE, f"the body is <{root.tag}>")
    ids = [text.strip() for text in root.xpath("IdList/Id/text()") if text.strip()]
    start = whole_number(root.findtext("RetStart"))
    shown = start // spec.results_per_page + 1 if start is not None else None
    return Extracted(
        results=tuple(SerpResult(url=article_url(pmid), title="", pmid=pmid) for pmid in ids),
        shown_page=shown,
        follow_up=build_follow_up(spec, ids) if ids else None,
    )


def _summaries(body: bytes) -> Extracted:
    """An esummary answer: one complete result per id, in the order esearch gave them."""
    doc, problem = json_document(body, SHAPE)
    if problem is not None:
        return problem
    if "error" in doc:
        return Extracted(error=f"esummary error: {doc['error']}")
    summaries = doc.get("result")
    uids = summaries.get("uids") if isinstance(summaries, dict) else None
    if not isinstance(uids, list):
        return layout_changed(SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
    records = [
        {**(summaries.get(pmid) or {}), "uid": pmid} for pmid in uids if isinstance(pmid, str)
    ]
    results, dropped = record_results(records, _summary)
    return Extracted(results=results, dropped=dropped)


def _summary(record: dict[str, Any]) -> SerpResult | None:
    pmid = record["uid"]
    ids = {a.get("idtype"): a.get("value") for a in record.get("articleids") or ()}
    title = " ".join((record.get("title") or "").split())
    if not title:
        return None
    venue = record.get("fulljournalname") or record.get("source") or ""
    return SerpResult(
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
