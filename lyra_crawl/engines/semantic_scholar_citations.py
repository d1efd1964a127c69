"""Semantic Scholar's citation links: /graph/v1/paper/{id}/references and /citations. Pure.

Docs: https://api.semanticscholar.org/api-docs/graph (get_graph_get_paper_references,
get_graph_get_paper_citations). `{id}` is a paperId or `DOI:`, `ARXIV:`, `PMID:` and the
value. A list answers `{"offset", "next" (only while more remain), "data"}`, each entry
`{"citedPaper": {…}}` (references) or `{"citingPaper": {…}}` (citations) with the paper's
`fields` (the search's: engine spec `params.fields`); `limit` may be up to 1,000 here, ten
times the search's. Quirks seen in the captured citations answer (2024-07) and the docs:
- a reference Semantic Scholar could not match to a record of its own comes with `paperId`
  null and only a title: it is dropped (`unresolved`), having no id to link it by;
- an unknown paper is HTTP 404 `{"error": "Paper with id … not found"}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from urllib.parse import quote

from w3lib.url import add_or_replace_parameters

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import record_results
from lyra_crawl.engines.citation_links import (
    LinkRequest,
    LinksFound,
    LinkStep,
    PaperIds,
    Relation,
)
from lyra_crawl.engines.request import build_api_request
from lyra_crawl.engines.semantic_scholar import paper_result
from lyra_crawl.engines.shapes import foreign_records, json_document, key_paths, layout_changed

# The most entries one page of a list may hold (a larger limit is HTTP 400).
MAX_LIMIT = 1000
# The key under which an entry holds the paper at the other end of its edge.
OTHER_END = {Relation.REFERENCES: "citedPaper", Relation.CITATIONS: "citingPaper"}
SHAPE = "data (a list of {citedPaper: …} or {citingPaper: …} entries)"


def paper_key(spec: EngineSpec, ids: PaperIds) -> str | None:
    """How the API is asked for the paper: its own paperId, else an identifier it resolves."""
    own = ids.source_ids.get(spec.name)
    if own:
        return own
    for prefix, value in (("DOI", ids.doi), ("ARXIV", ids.arxiv_id), ("PMID", ids.pmid)):
        if value:
            return f"{prefix}:{value}"
    return None


def first_requests(
    spec: EngineSpec, ids: PaperIds, *, max_per_list: int, secrets: Mapping[str, str]
) -> tuple[LinkRequest, ...]:
    """The first page of the paper's references and of its citations."""
    key = paper_key(spec, ids)
    if key is None:
        return ()
    # The lists live beside the search: …/graph/v1/paper/{id}/references.
    papers_url = spec.url.rsplit("/", 1)[0]
    fields = spec.params.get("fields", "title")
    requests = []
    for relation in Relation:
        url = f"{papers_url}/{quote(key, safe=':/')}/{relation.value}"
        params = [("fields", fields), ("offset", "0"), ("limit", str(min(MAX_LIMIT, max_per_list)))]
        page = build_api_request(spec, url, params, secrets=secrets)
        requests.append(LinkRequest(page, LinkStep.LIST, (relation,), room=max_per_list))
    return tuple(requests)


def read(
    spec: EngineSpec, request: LinkRequest, body: bytes, *, secrets: Mapping[str, str]
) -> LinksFound:
    """One page of a list: the papers at the other end, and the next page while room is left.
    `secrets` are unused: the next page is this one's request at another offset."""
    doc, problem = json_document(body, SHAPE)
    if problem is not None:
        return LinksFound.problem(problem)
    if "error" in doc:
        return LinksFound(error=f"Semantic Scholar error: {doc['error']}")
    entries = doc.get("data")
    if not isinstance(entries, list):
        if "paperId" in doc:
            return _other_shape(f"the body is a single paper ({doc['paperId']})")
        return _other_shape(f"the body has {key_paths(doc) or 'no keys'}")
    other_end = OTHER_END[request.relation]
    foreign = foreign_records(entries, (other_end,))
    if foreign:
        return _other_shape(f"data: {foreign}")
    records = [entry.get(other_end) for entry in entries if isinstance(entry, dict)]
    resolved = [record for record in records if isinstance(record, dict) and record.get("paperId")]
    papers, dropped = record_results(resolved, paper_result)
    if len(resolved) < len(entries):
        dropped["unresolved"] = len(entries) - len(resolved)
    room = request.room - len(entries)
    following = doc.get("next")
    if not isinstance(following, int) or following <= 0 or room <= 0:
        return LinksFound(papers=papers, dropped=dropped)
    url = add_or_replace_parameters(
        request.page.url, {"offset": str(following), "limit": str(min(MAX_LIMIT, room))}
    )
    # The same request at the next offset, its credentials kept.
    next_page = replace(
        request, page=replace(request.page, url=url), room=room, page_number=request.page_number + 1
    )
    return LinksFound(papers=papers, following=(next_page,), dropped=dropped)


def _other_shape(found: str) -> LinksFound:
    return LinksFound.problem(layout_changed(SHAPE, found))
