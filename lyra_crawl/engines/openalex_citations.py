"""OpenAlex's citation links: a work's `referenced_works`, and `/works?filter=cites:`. Pure.

Docs: https://docs.openalex.org/api-entities/works (work object: referenced_works,
cited_by_count, cited_by_api_url; filters cites:, openalex:). A paper's links take three kinds
of request:
- its work, `/works/{W-id}` (or `doi:…`, `pmid:…`): `referenced_works` lists the W-ids of
  the works it cites (ids only) and `cited_by_count` how many cite it;
- the referenced works' records, up to LOOKUP_IDS at a time: `/works?filter=openalex:W1|W2…`
  (one OR filter takes at most 100 values); a referenced work OpenAlex no longer serves is
  missing from the answer and dropped (`unresolved`);
- the works citing it, `/works?filter=cites:W…`, paged by `page` and `per-page` (1..100 in
  the current docs) with the search's `meta` (count, page, per_page); basic paging reaches
  page * per-page <= 10,000 (the spec's max_results_window).
Each asks only for the fields it reads (`select`), as works are some 25 kB each whole. A work
nobody cites (`cited_by_count` 0) costs no citations request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from w3lib.url import add_or_replace_parameters

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.citation_links import (
    LinkRequest,
    LinksFound,
    LinkStep,
    PaperIds,
    Relation,
)
from lyra_crawl.engines.openalex import WORK_ID_PREFIX, is_work, read_works
from lyra_crawl.engines.request import build_api_request
from lyra_crawl.engines.shapes import json_document, key_paths, layout_changed
from lyra_crawl.papers.identifiers import ARXIV_DOI_PREFIX

LOOKUP_IDS = 100
PER_PAGE = 100
WORK_FIELDS = "id,referenced_works,cited_by_count"
# What openalex.work_result reads of a work.
RECORD_FIELDS = (
    "id,doi,title,display_name,publication_year,publication_date,ids,primary_location,"
    "authorships,abstract_inverted_index,best_oa_location"
)
WORK_SHAPE = "a single work (id https://openalex.org/W…) with referenced_works"
LIST_SHAPE = "results (a list of works) with meta.count"


def work_key(spec: EngineSpec, ids: PaperIds) -> str | None:
    """How OpenAlex is asked for the paper's work: its W-id, else an identifier it resolves."""
    own = ids.source_ids.get(spec.name)
    if own:
        return own.removeprefix(WORK_ID_PREFIX)
    if ids.doi:
        return f"doi:{ids.doi}"
    if ids.pmid:
        return f"pmid:{ids.pmid}"
    if ids.arxiv_id:
        return f"doi:{ARXIV_DOI_PREFIX}{ids.arxiv_id}"
    return None


def first_requests(
    spec: EngineSpec, ids: PaperIds, *, max_per_list: int, secrets: Mapping[str, str]
) -> tuple[LinkRequest, ...]:
    """The paper's work: it leads to both lists."""
    key = work_key(spec, ids)
    if key is None:
        return ()
    page = build_api_request(
        spec, f"{spec.url}/{quote(key, safe=':/')}", [("select", WORK_FIELDS)], secrets=secrets
    )
    return (LinkRequest(page, LinkStep.WORK, tuple(Relation), room=max_per_list),)


def read(
    spec: EngineSpec, request: LinkRequest, body: bytes, *, secrets: Mapping[str, str]
) -> LinksFound:
    shape = WORK_SHAPE if request.step is LinkStep.WORK else LIST_SHAPE
    doc, problem = json_document(body, shape)
    if problem is not None:
        return LinksFound.problem(problem)
    if "error" in doc:
        detail = ": ".join(str(doc[key]) for key in ("error", "message") if doc.get(key))
        return LinksFound(error=f"OpenAlex error: {detail}")
    if request.step is LinkStep.WORK:
        return _work(spec, request, doc, secrets)
    return _works(spec, request, doc)


def _work(
    spec: EngineSpec, request: LinkRequest, doc: dict[str, Any], secrets: Mapping[str, str]
) -> LinksFound:
    """The lookups of the works it references, and the first page of the works citing it."""
    if not is_work(doc) or not isinstance(doc.get("referenced_works", []), list):
        found = f"the body is {doc['id']}" if "id" in doc else f"the body has {key_paths(doc)}"
        return LinksFound.problem(layout_changed(WORK_SHAPE, found))
    work_id = str(doc["id"]).removeprefix(WORK_ID_PREFIX)
    referenced = [
        str(ref).removeprefix(WORK_ID_PREFIX) for ref in doc.get("referenced_works") or ()
    ][: request.room]
    following = [
        _list_request(
            spec,
            [("filter", f"openalex:{'|'.join(chunk)}"), ("per-page", str(len(chunk)))],
            LinkStep.LOOKUP,
            Relation.REFERENCES,
            room=len(chunk),
            secrets=secrets,
            asked=len(chunk),
        )
        for chunk in _chunks(referenced, LOOKUP_IDS)
    ]
    if doc.get("cited_by_count") != 0:
        per_page = min(PER_PAGE, request.room)
        following.append(
            _list_request(
                spec,
                [("filter", f"cites:{work_id}"), ("per-page", str(per_page)), ("page", "1")],
                LinkStep.LIST,
                Relation.CITATIONS,
                room=request.room,
                secrets=secrets,
            )
        )
    return LinksFound(following=tuple(following))


def _works(spec: EngineSpec, request: LinkRequest, doc: dict[str, Any]) -> LinksFound:
    """A lookup's or a list page's works; a list's next page while room is left."""
    found = read_works(doc)
    if found.error or found.layout_changed:
        return LinksFound.problem(found)
    dropped = dict(found.dropped)
    if request.step is LinkStep.LOOKUP:
        records = doc.get("results") or ()
        if len(records) < request.asked:
            dropped["unresolved"] = request.asked - len(records)
        return LinksFound(papers=found.results, dropped=dropped)
    papers = found.results[: request.room]
    meta = doc.get("meta") or {}
    count, page, per_page = (meta.get(key) for key in ("count", "page", "per_page"))
    room = request.room - len(doc.get("results") or ())
    window = spec.max_results_window
    more = (
        isinstance(count, int)
        and isinstance(page, int)
        and isinstance(per_page, int)
        and page * per_page < count
        and room > 0
        and (window is None or (page + 1) * per_page <= window)
    )
    if not more:
        return LinksFound(papers=papers, dropped=dropped)
    # per-page stays: the pages are its multiples. What passes the room is cut off on reading.
    url = add_or_replace_parameters(request.page.url, {"page": str(page + 1)})
    next_page = replace(
        request, page=replace(request.page, url=url), room=room, page_number=request.page_number + 1
    )
    return LinksFound(papers=papers, following=(next_page,), dropped=dropped)


def _list_request(
    spec: EngineSpec,
    params: list[tuple[str, str]],
    step: LinkStep,
    relation: Relation,
    *,
    room: int,
    secrets: Mapping[str, str],
    asked: int = 0,
) -> LinkRequest:
    page = build_api_request(spec, spec.url, [*params, ("select", RECORD_FIELDS)], secrets=secrets)
    return LinkRequest(page, step, (relation,), room=room, asked=asked)


def _chunks(values: Sequence[str], size: int) -> list[Sequence[str]]:
    return [values[start : start + size] for start in range(0, len(values), size)]
