"""The citation graph (lyra_crawl.simulator.citations) as Semantic Scholar and OpenAlex serve it.

Semantic Scholar (api.semanticscholar.org/graph/v1, docs: api-docs/graph):
- `/paper/{id}`, `/paper/{id}/references`, `/paper/{id}/citations`; `{id}` a paperId or
  `DOI:<doi>`. Lists are `{"offset", "next" (only while more remain), "data"}`, each entry
  `{"citedPaper": {...}}` (references) or `{"citingPaper": {...}}` (citations); `offset`
  (default 0) and `limit` (default 100, at most 1000: more is a 400 error).
- `fields` (comma-separated) picks the paper's fields, paperId always among them (default
  `paperId,title`); `contexts`, `intents` and `isInfluential` are the entry's own ([], [],
  false). Names the simulator does not know are left out.
- An unknown id is a 404 `{"error": "Paper with id … not found"}`.

OpenAlex (api.openalex.org, docs: api-entities/works):
- `/works/{id}`, `{id}` a W-id, its `https://openalex.org/` URL, `doi:<doi>` or a DOI link:
  the bare work; unknown: 404 `{"error": "Not Found", "message": …}`.
- `/works?filter=cites:W…` (the works citing it), `cited_by:W…` (the works it cites),
  `openalex:W…|W…` (or `ids.openalex:`) and `doi:…|…` (those works, in the order asked), paged
  by `page` (from 1) and `per-page` (default 25, at most 200) with the search's `meta`. One
  filter per request; any other is a 400 `{"error": …, "message": …}`.

These pages answer before any fault or latency, as the other non-result pages do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol
from urllib.parse import unquote

from lyra_crawl.simulator.citations import PaperKey, citations, references
from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import SimPage, int_param, json_page
from lyra_crawl.simulator.engines.paper_ids import Found, PaperIndex, cited_as, graph_result

S2_PAPER_PATH = "/graph/v1/paper/"
S2_NOT_PAPERS = frozenset({"search", "batch", "autocomplete"})
S2_DEFAULT_LIMIT = 100
S2_MAX_LIMIT = 1000
S2_EDGE_FIELDS = {"contexts": [], "intents": [], "isInfluential": False}
OPENALEX_PER_PAGE = 25
OPENALEX_MAX_PER_PAGE = 200
WORK_ID = re.compile(r"(W\d+)$")
DOI_FORMS = ("doi:", "https://doi.org/", "http://doi.org/")


class S2Records(Protocol):
    papers: PaperIndex

    def paper_record(self, query: str, r: SimResult) -> dict[str, Any]: ...

    def preprint_record(self, query: str, r: SimResult) -> dict[str, Any]: ...


class OpenAlexWorks(Protocol):
    papers: PaperIndex

    def work(self, query: str, r: SimResult, *, preprint: bool = False) -> dict[str, Any]: ...


# -- Semantic Scholar ------------------------------------------------------------------------


def s2_graph_page(engine: S2Records, path: str, params: dict[str, str]) -> SimPage | None:
    """The answer to /paper/{id}[/references|/citations]; None for other paths (search)."""
    if not path.startswith(S2_PAPER_PATH):
        return None
    rest = path[len(S2_PAPER_PATH) :]
    paper_id, _, relation = rest.rpartition("/")
    if relation not in ("references", "citations"):
        paper_id, relation = rest, ""
    paper_id = unquote(paper_id)
    if not paper_id or paper_id.split("/")[0] in S2_NOT_PAPERS:
        return None
    found = _s2_find(engine.papers, paper_id)
    if found is None:
        return json_page(json.dumps({"error": f"Paper with id {paper_id} not found"}), 404)
    fields = _s2_fields(params)
    if not relation:
        return json_page(json.dumps(_s2_record(engine, found, fields)))
    limit = int_param(params, "limit") or S2_DEFAULT_LIMIT
    if limit > S2_MAX_LIMIT:
        body = {"error": f"Requested limit {limit} exceeds the maximum of {S2_MAX_LIMIT}"}
        return json_page(json.dumps(body), 400)
    offset = int_param(params, "offset") or 0
    if relation == "references":
        ends = [(cited_as(key), key) for key in references(found.key)]
        other_end = "citedPaper"
    else:
        ends = [(Found(key), key) for key in citations(found.key)]
        other_end = "citingPaper"
    entries = [
        {
            **{name: value for name, value in S2_EDGE_FIELDS.items() if name in fields},
            other_end: _s2_end(engine, end, key, fields),
        }
        for end, key in ends[offset : offset + limit]
    ]
    body: dict[str, Any] = {"offset": offset}
    if offset + limit < len(ends):
        body["next"] = offset + limit
    body["data"] = entries
    return json_page(json.dumps(body))


def _s2_find(papers: PaperIndex, paper_id: str) -> Found | None:
    scheme, _, value = paper_id.partition(":")
    if value and scheme.upper() == "DOI":
        return papers.find("doi", value)
    return papers.find("s2", paper_id)


def _s2_fields(params: dict[str, str]) -> set[str]:
    names = {name.strip() for name in params.get("fields", "").split(",") if name.strip()}
    return (names or {"title"}) | {"paperId"}


def _s2_record(engine: S2Records, found: Found, fields: set[str]) -> dict[str, Any]:
    result = graph_result(found.key)
    build = engine.preprint_record if found.preprint else engine.paper_record
    record = build(found.key.query, result)
    return {name: value for name, value in record.items() if name in fields}


def _s2_end(
    engine: S2Records, end: Found | None, key: PaperKey, fields: set[str]
) -> dict[str, Any]:
    """The paper at the other end of an entry; an unmatched one only by its title."""
    if end is not None:
        return _s2_record(engine, end, fields)
    stub: dict[str, Any] = {name: None for name in sorted(fields) if name not in S2_EDGE_FIELDS}
    if "authors" in stub:
        stub["authors"] = []
    stub["title"] = graph_result(key).title
    return stub


# -- OpenAlex --------------------------------------------------------------------------------


def openalex_graph_page(engine: OpenAlexWorks, path: str, params: dict[str, str]) -> SimPage | None:
    """The answer to /works/{id} and /works?filter=…; None for a search."""
    if path.startswith("/works/"):
        work_id = unquote(path[len("/works/") :])
        found = _openalex_find(engine.papers, work_id)
        if found is None:
            return _openalex_error(404, "Not Found", f"{work_id} is not a known work")
        return json_page(json.dumps(_work(engine, found)))
    if path.rstrip("/") != "/works" or "filter" not in params:
        return None
    name, _, value = params["filter"].partition(":")
    if "," in value or name not in ("cites", "cited_by", "openalex", "ids.openalex", "doi"):
        return _openalex_error(
            400,
            "Invalid query parameters error.",
            f"filter {params['filter']!r}: the simulator knows one of cites:, cited_by:, "
            "openalex:, ids.openalex: or doi:",
        )
    per_page = int_param(params, "per-page") or OPENALEX_PER_PAGE
    if per_page > OPENALEX_MAX_PER_PAGE:
        return _openalex_error(
            400, "Invalid query parameters error.", f"per-page is {per_page}; it must be <= 200"
        )
    page = int_param(params, "page") or 1
    works = _filtered(engine.papers, name, value)
    shown = works[(page - 1) * per_page : page * per_page]
    body = {
        "meta": {
            "count": len(works),
            "db_response_time_ms": 9,
            "page": page,
            "per_page": per_page,
            "groups_count": None,
        },
        "results": [_work(engine, found) for found in shown],
        "group_by": [],
    }
    return json_page(json.dumps(body))


def _filtered(papers: PaperIndex, name: str, value: str) -> Sequence[Found]:
    if name in ("openalex", "ids.openalex", "doi"):
        named = [
            _openalex_find(papers, part if name != "doi" or "/doi.org/" in part else f"doi:{part}")
            for part in value.split("|")
        ]
        return [found for found in named if found is not None]
    paper = _openalex_find(papers, value)
    if paper is None:
        return []
    if name == "cites":
        return [Found(key) for key in citations(paper.key)]
    return [end for key in references(paper.key) if (end := cited_as(key)) is not None]


def _openalex_find(papers: PaperIndex, work_id: str) -> Found | None:
    """A work by its W-id (bare or as a URL) or its DOI (`doi:…` or a DOI link)."""
    lowered = work_id.lower()
    for form in DOI_FORMS:
        if lowered.startswith(form):
            return papers.find("doi", lowered[len(form) :])
    match = WORK_ID.search(work_id)
    return papers.find("openalex", match.group(1)) if match else None


def _work(engine: OpenAlexWorks, found: Found) -> dict[str, Any]:
    return engine.work(found.key.query, graph_result(found.key), preprint=found.preprint)


def _openalex_error(status: int, error: str, message: str) -> SimPage:
    return json_page(json.dumps({"error": error, "message": message}), status)
