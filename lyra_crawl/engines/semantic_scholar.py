"""Semantic Scholar Graph API (api.semanticscholar.org/graph/v1/paper/search): JSON papers.

Paged by `offset` / `limit`; offset + limit may not pass 1,000 (max_results_window in the
spec). Docs: https://api.semanticscholar.org/api-docs/graph. Quirks seen 2026-04 in the
captured responses:
- a search without hits is `{"total": 0, "offset": 0}`, with no `data` key at all;
- a bad request is HTTP 400 with `{"error": "<message>"}`;
- a record holds only the fields asked for (paperId and title by default), so `url` may be
  missing; `externalIds.DOI` may be null; `venue` may be "" while `journal.name` is set;
- `openAccessPdf` of a closed paper is `{"url": "", "status": "CLOSED"}`: an empty URL.
The other endpoints answer in other shapes, each `layout_changed` (seen 2024-12): a single
paper (no `data`), /paper/batch (a JSON list), /author/search (`data` of authors),
/paper/{id}/citations (`data` of `{"citingPaper": …}`), /recommendations
(`recommendedPapers`). /paper/search/match and /paper/search/bulk answer papers in `data`.
"""

from __future__ import annotations

from typing import Any

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, record_results
from lyra_crawl.engines.shapes import foreign_records, json_document, key_paths, layout_changed
from lyra_crawl.papers.identifiers import normalize_doi

PAPER_URL = "https://www.semanticscholar.org/paper/{paper_id}"
SHAPE = "data (a list of papers with paperId and title)"
PAPER_KEYS = ("paperId", "title")


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = json_document(body, SHAPE)
    if problem is not None:
        return problem
    if "error" in doc:
        return Extracted(error=f"Semantic Scholar error: {doc['error']}")
    records = doc.get("data")
    if records is None and doc.get("total") == 0:
        return Extracted()
    if not isinstance(records, list):
        if "paperId" in doc:
            return layout_changed(SHAPE, f"the body is a single paper ({doc['paperId']})")
        return layout_changed(SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
    foreign = foreign_records(records, PAPER_KEYS)
    if foreign:
        return layout_changed(SHAPE, f"data: {foreign}")
    results, dropped = record_results(records, paper_result)
    offset = doc.get("offset")
    # An answer without records says offset 0 whatever was asked: only a page of records
    # tells which page it is.
    shown = offset // spec.results_per_page + 1 if records and isinstance(offset, int) else None
    return Extracted(results=results, shown_page=shown, dropped=dropped)


def paper_result(record: dict[str, Any]) -> SerpResult | None:
    """A paper record as a result; None without a title or a paperId."""
    paper_id = record.get("paperId") or ""
    title = " ".join((record.get("title") or "").split())
    if not title or not paper_id:
        return None
    ids = record.get("externalIds") or {}
    journal = record.get("journal") or {}
    pmid = ids.get("PubMed")
    year = record.get("year")
    open_access = record.get("openAccessPdf") or {}
    return SerpResult(
        url=record.get("url") or PAPER_URL.format(paper_id=paper_id),
        title=title,
        snippet=record.get("abstract") or "",
        doi=normalize_doi(ids.get("DOI")),
        arxiv_id=ids.get("ArXiv") or None,
        pmid=str(pmid) if pmid else None,
        authors=tuple(a["name"] for a in record.get("authors") or () if a.get("name")),
        year=year if isinstance(year, int) else None,
        venue=record.get("venue") or journal.get("name") or None,
        abstract=record.get("abstract") or None,
        source_id=paper_id,
        pdf_url=open_access.get("url") or None,
    )
