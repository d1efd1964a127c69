"""OpenAlex works search (api.openalex.org/works?search=): JSON works, paged by `page`.

Docs: https://docs.openalex.org/api-entities/works. Basic paging reaches only the first
10,000 results (page * per-page <= 10,000: max_results_window in the spec). Quirks seen
2026-04 in the captured responses:
- abstracts come only as `abstract_inverted_index` (word -> positions), a licensing choice of
  OpenAlex, and are rebuilt here in word order;
- DOIs and PMIDs are URLs (`https://doi.org/10…`, `https://pubmed.ncbi.nlm.nih.gov/<id>`);
- `primary_location.source` is null for a third of works (repositories, unknown venues);
- an open-access PDF is `best_oa_location.pdf_url` (null for closed works and for open ones
  known only by a landing page);
- a single-work lookup (`/works/W…`) answers with the bare work, not a `results` list: it is
  read as a page of one, so a resolved DOI or W-id parses like a search hit;
- every list carries `group_by: []`; a `group_by` query answers counts there and no results.
Errors are `{"error": "...", "message": "..."}` with HTTP 400 (docs, api-reference/errors).
Another entity (an author `A…`, a source `S…`, alone or listed) or a group_by answer is
`layout_changed`, never a page of results.
"""

from __future__ import annotations

from typing import Any

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, SerpResult, record_results
from lyra_crawl.engines.shapes import json_document, key_paths, layout_changed
from lyra_crawl.papers.identifiers import arxiv_id_from_doi, normalize_doi, normalize_pmid

WORK_ID_PREFIX = "https://openalex.org/"
SHAPE = "results (a list of works) or a single work (id https://openalex.org/W…)"


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = json_document(body, SHAPE)
    return problem if problem is not None else read_works(doc)


def read_works(doc: dict[str, Any]) -> Extracted:
    """The works of a decoded answer: a list's, or a single work's as a page of one."""
    if "error" in doc:
        detail = ": ".join(str(doc[key]) for key in ("error", "message") if doc.get(key))
        return Extracted(error=f"OpenAlex error: {detail}")
    if "results" not in doc:
        if "id" not in doc:
            return layout_changed(SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
        if not is_work(doc):
            return layout_changed(SHAPE, f"the body is {doc['id']}")
        results, dropped = record_results([doc], work_result)
        return Extracted(results=results, dropped=dropped)
    records = doc["results"]
    groups = doc.get("group_by")
    if not isinstance(records, list) or (groups and not records):
        found = f"{len(groups)} group_by counts" if groups else "results that are not a list"
        return layout_changed(SHAPE, f"the body has {found}")
    if records and not any(is_work(record) for record in records):
        first = records[0].get("id") if isinstance(records[0], dict) else records[0]
        return layout_changed(SHAPE, f"the results are other entities ({first}, …)")
    results, dropped = record_results(records, work_result)
    shown = (doc.get("meta") or {}).get("page")
    return Extracted(
        results=results, shown_page=shown if isinstance(shown, int) else None, dropped=dropped
    )


def is_work(record: object) -> bool:
    """Whether a JSON value is a work (its id an https://openalex.org/W… URL)."""
    return isinstance(record, dict) and str(record.get("id", "")).startswith(WORK_ID_PREFIX + "W")


def abstract_text(inverted_index: dict[str, list[int]] | None) -> str | None:
    """The abstract in reading order from OpenAlex's word -> positions index."""
    if not inverted_index:
        return None
    positions = {
        position: word for word, places in inverted_index.items() for position in places or ()
    }
    return " ".join(positions[position] for position in sorted(positions)) or None


def work_result(work: dict[str, Any]) -> SerpResult | None:
    """A work as a result; None without a title or an id."""
    work_id = str(work.get("id") or "")
    title = " ".join((work.get("title") or work.get("display_name") or "").split())
    if not title or not work_id:
        return None
    ids = work.get("ids") or {}
    location = work.get("primary_location") or {}
    source = location.get("source") or {}
    doi = normalize_doi(work.get("doi") or ids.get("doi"))
    abstract = abstract_text(work.get("abstract_inverted_index"))
    year = work.get("publication_year")
    open_access = work.get("best_oa_location") or {}
    return SerpResult(
        url=location.get("landing_page_url") or work.get("doi") or work_id,
        title=title,
        snippet=abstract or "",
        date=work.get("publication_date") or None,
        doi=doi,
        arxiv_id=arxiv_id_from_doi(doi),
        pmid=normalize_pmid(ids.get("pmid")),
        authors=tuple(
            name
            for authorship in work.get("authorships") or ()
            if (name := (authorship.get("author") or {}).get("display_name"))
        ),
        year=year if isinstance(year, int) else None,
        venue=source.get("display_name") or None,
        abstract=abstract,
        source_id=work_id.removeprefix(WORK_ID_PREFIX),
        pdf_url=open_access.get("pdf_url") or None,
    )
