"""Paper APIs in their real shapes: Semantic Scholar search, OpenAlex works, Crossref works.

Each record is a SERP result of the same query (corpus.page_results), so the DOIs and titles
the SERP engines show come back here, the way a crawl's sources overlap in life:
- a result with a DOI keeps it in every API (Crossref, which only knows DOI'd works, gives the
  others a DOI of their own);
- titles carry noise that differs per API (case, punctuation, an " (extended abstract)"
  suffix), so only a fuzzy title match pairs them;
- every tenth result is a journal paper with an arXiv preprint: Semantic Scholar gives one
  record with both the journal DOI and the ArXiv id, OpenAlex gives two works, the journal
  version and the preprint (DOI 10.48550/arXiv.<id>), the preprint taking the next slot.
Years and authors come from the result (corpus.make_result), PMIDs and arXiv ids match the
PubMed and arXiv simulators; every fourth result has an open-access PDF, which Semantic Scholar
(`openAccessPdf`) and OpenAlex (`best_oa_location`) name. Abstracts are corpus.abstract_of,
except for papers whose publisher withholds them (corpus.abstract_withheld: every fourth), which
both APIs leave null; OpenAlex gives them as `abstract_inverted_index` (word -> positions;
joining the words in position order with single spaces gives the text back exactly).

Both APIs also serve the citation graph (lyra_crawl.simulator.citations) through
citation_pages: OpenAlex works carry `referenced_works`, `cited_by_count` and
`cited_by_api_url`; Semantic Scholar answers /paper/{id}, /paper/{id}/references and
/paper/{id}/citations, OpenAlex /works/{id} and /works?filter=cites:|cited_by:|openalex:|doi:.
"""

from __future__ import annotations

import hashlib
import json
from html import escape
from typing import Any

from lyra_crawl.simulator.citations import PaperKey, citations
from lyra_crawl.simulator.corpus import SimResult, abstract_of, abstract_withheld
from lyra_crawl.simulator.engines.base import OffsetPaged, SimPage, int_param, json_page
from lyra_crawl.simulator.engines.citation_pages import openalex_graph_page, s2_graph_page
from lyra_crawl.simulator.engines.paper_ids import (
    PaperIndex,
    has_preprint,
    openalex_reference_ids,
    openalex_work_id,
    preprint_doi,
    s2_paper_id,
)
from lyra_crawl.simulator.engines.scholarly import arxiv_id_of, author_names, pmid_of

VENUES = (
    "Journal of Applied Ecology",
    "Environmental Research Letters",
    "PLOS ONE",
    "Nature Climate Change",
    "Proceedings of the Sim Conference",
)
TOTAL = 200


def has_pmid(result: SimResult) -> bool:
    return result.index % 3 == 0


def open_access_pdf(result: SimResult) -> str | None:
    if result.index % 4 != 1:
        return None
    return f"https://repository.sim/pdf/{hashlib.sha1(result.url.encode()).hexdigest()[:12]}.pdf"


def venue(result: SimResult) -> str:
    return VENUES[result.index % len(VENUES)]


def noisy_title(result: SimResult, variant: int) -> str:
    """The result's title as one API spells it: exact, lower-case, repunctuated, suffixed."""
    title = result.title
    match (result.index + variant) % 4:
        case 1:
            return title.lower()
        case 2:
            return title.replace(": ", " - ") + "."
        case 3:
            return f"{title} (extended abstract)"
    return title


def _rate_limited(body: dict[str, Any]) -> SimPage:
    return SimPage(429, json.dumps(body), "application/json", (("Retry-After", "1"),))


class SemanticScholar(OffsetPaged):
    """api.semanticscholar.org/graph/v1/paper/search: `offset` / `limit`, at most 1,000 deep."""

    name = "semantic_scholar"
    per_page = 100
    step = 100
    page_param = "offset"
    query_param = "query"
    window = 1000

    def __init__(self, papers: PaperIndex) -> None:
        self.papers = papers

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        return s2_graph_page(self, path, params)

    def page_number(self, params: dict[str, str]) -> int | None:
        offset = int_param(params, "offset") or 0
        limit = int_param(params, "limit") or self.per_page
        if limit > 100 or offset + limit > self.window:
            return None
        return super().page_number(params)

    def refused(self) -> SimPage:
        # The real API's answer to offset + limit past 1,000 or a limit over 100.
        body = {"error": "Requested data for this limit and/or offset is not available"}
        return json_page(json.dumps(body), status=400)

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        offset = (page_number - 1) * self.step
        body: dict[str, Any] = {"total": TOTAL if results else 0, "offset": offset}
        if results:
            body["data"] = [self.paper_record(query, r) for r in results]
            if offset + len(results) < TOTAL:
                body["next"] = offset + len(results)
        else:
            body["offset"] = 0  # as the real API answers a search without hits
        return json_page(json.dumps(body))

    def paper_record(self, query: str, r: SimResult) -> dict[str, Any]:
        """The paper's record, every field of it."""
        paper_id = s2_paper_id(query, r.index)
        pdf = open_access_pdf(r)
        ids: dict[str, Any] = {"DOI": r.doi, "CorpusId": 100000 + r.index}
        if has_preprint(r.index):
            ids["ArXiv"] = arxiv_id_of(r)
        if has_pmid(r):
            ids["PubMed"] = pmid_of(r)
        return {
            "paperId": paper_id,
            "externalIds": ids,
            "url": f"https://www.semanticscholar.org/paper/{paper_id}",
            "title": noisy_title(r, 1),
            "abstract": None if abstract_withheld(r) else abstract_of(r),
            "venue": "" if r.index % 2 else venue(r),
            "journal": {"name": venue(r)},
            "year": r.year,
            "authors": [
                {"authorId": str(1000 + i), "name": name} for i, name in enumerate(author_names(r))
            ],
            # A closed paper's is {"url": "", "status": "CLOSED"}, as the real API answers.
            "openAccessPdf": {
                "url": pdf or "",
                "status": "GREEN" if pdf else "CLOSED",
                "license": None,
            },
        }

    def preprint_record(self, query: str, r: SimResult) -> dict[str, Any]:
        """The separate record of the paper's preprint: the arXiv id, no DOI, a year earlier."""
        paper_id = s2_paper_id(query, r.index, preprint=True)
        return {
            **self.paper_record(query, r),
            "paperId": paper_id,
            "externalIds": {"ArXiv": arxiv_id_of(r), "CorpusId": 500000 + r.index},
            "url": f"https://www.semanticscholar.org/paper/{paper_id}",
            "title": noisy_title(r, 0),
            "venue": "arXiv.org",
            "journal": None,
            "year": r.year - 1,
        }

    def captcha_page(self, query: str) -> SimPage:
        return _rate_limited({"message": "Too Many Requests", "code": "429"})


class OpenAlex(OffsetPaged):
    """api.openalex.org/works?search=: `page` (from 1) and `per-page`."""

    name = "openalex"
    per_page = 100
    step = 1
    base = 1
    page_param = "page"
    query_param = "search"

    def __init__(self, papers: PaperIndex) -> None:
        self.papers = papers

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        return openalex_graph_page(self, path, params)

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        works = [work for r in results for work in self._works(query, r)][: self.per_page]
        body = {
            "meta": {
                "count": TOTAL,
                "db_response_time_ms": 12,
                "page": page_number,
                "per_page": self.per_page,
                "groups_count": None,
            },
            "results": works,
            "group_by": [],
        }
        return json_page(json.dumps(body))

    def _works(self, query: str, r: SimResult) -> list[dict[str, Any]]:
        journal = self.work(query, r)
        return [journal, self.work(query, r, preprint=True)] if has_preprint(r.index) else [journal]

    def work(self, query: str, r: SimResult, *, preprint: bool = False) -> dict[str, Any]:
        """The paper's work (its preprint's), every field of it."""
        bare_id = openalex_work_id(query, r.index, preprint=preprint)
        work_id = f"https://openalex.org/{bare_id}"
        doi = preprint_doi(r.index) if preprint else r.doi
        year = r.year - 1 if preprint else r.year
        ids: dict[str, str] = {"openalex": work_id}
        if doi:
            ids["doi"] = f"https://doi.org/{doi}"
        if has_pmid(r) and not preprint:
            ids["pmid"] = f"https://pubmed.ncbi.nlm.nih.gov/{pmid_of(r)}"
        pdf = open_access_pdf(r)
        positions: dict[str, list[int]] = {}
        if not abstract_withheld(r):
            for position, word in enumerate(abstract_of(r).split()):
                positions.setdefault(word, []).append(position)
        key = PaperKey(query, r.index)
        if preprint:
            source: str | None = "arXiv (Cornell University)"
            landing = f"https://arxiv.org/abs/{arxiv_id_of(r)}"
        else:
            # Repository copies and unknown venues have no source.
            source = venue(r) if doi or r.index % 2 else None
            landing = ids.get("doi") or r.landing_url
        referenced = openalex_reference_ids(key)
        return {
            "id": work_id,
            "doi": ids.get("doi"),
            "title": noisy_title(r, 2),
            "display_name": noisy_title(r, 2),
            "publication_year": year,
            "publication_date": f"{year}-03-01",
            "ids": ids,
            "primary_location": {
                "landing_page_url": landing,
                "source": {"display_name": source} if source else None,
            },
            "type": "preprint" if preprint else "article",
            "authorships": [
                {"author_position": "first" if i == 0 else "middle", "author": {"display_name": n}}
                for i, n in enumerate(author_names(r))
            ],
            "abstract_inverted_index": positions or None,
            "best_oa_location": {"is_oa": True, "pdf_url": pdf} if pdf else None,
            "referenced_works": [f"https://openalex.org/{ref}" for ref in referenced],
            "referenced_works_count": len(referenced),
            "cited_by_count": len(citations(key)),
            "cited_by_api_url": f"https://api.openalex.org/works?filter=cites:{bare_id}",
        }

    def captcha_page(self, query: str) -> SimPage:
        return _rate_limited({"error": "Rate limit exceeded", "message": "slow down"})


class Crossref(OffsetPaged):
    """api.crossref.org/works?query=: `rows` / `offset`, `mailto` for the polite pool."""

    name = "crossref"
    per_page = 100
    step = 100
    page_param = "offset"
    query_param = "query"

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        offset = (page_number - 1) * self.step
        message = {
            "facets": {},
            "total-results": TOTAL,
            "items": [self._item(query, r) for r in results],
            "items-per-page": self.per_page,
            "query": {"start-index": offset, "search-terms": query},
        }
        body = {
            "status": "ok",
            "message-type": "work-list",
            "message-version": "1.0.0",
            "message": message,
        }
        return json_page(json.dumps(body))

    def _item(self, query: str, r: SimResult) -> dict[str, Any]:
        suffix = int(hashlib.sha1(f"crossref|{query}|{r.index}".encode()).hexdigest(), 16)
        doi = r.doi or f"10.5555/simcr.{suffix % 10**7}"
        item: dict[str, Any] = {
            "DOI": doi,
            "URL": f"https://doi.org/{doi}",
            "type": "journal-article",
            "title": [noisy_title(r, 3)],
            "container-title": [venue(r)],
            # A work without a date has [[null]] (seen 2026-04).
            "issued": {"date-parts": [[None]] if r.index % 7 == 3 else [[r.year, 3, 1]]},
            "author": [
                {"given": given, "family": family, "sequence": "first" if i == 0 else "additional"}
                for i, (given, family) in enumerate(r.authors)
            ],
        }
        if r.index % 3 == 0 and not abstract_withheld(r):
            text = escape(abstract_of(r), quote=False)
            item["abstract"] = f"<jats:title>Abstract</jats:title><jats:p>{text}</jats:p>"
        return item

    def captcha_page(self, query: str) -> SimPage:
        return _rate_limited({"status": "failed", "message": "Too many requests"})
