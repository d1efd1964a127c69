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
(`openAccessPdf`) and OpenAlex (`best_oa_location`) name.
"""

from __future__ import annotations

import hashlib
import json
from html import escape
from typing import Any

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import OffsetPaged, SimPage, int_param, json_page
from lyra_crawl.simulator.engines.scholarly import arxiv_id_of, author_names, pmid_of

VENUES = (
    "Journal of Applied Ecology",
    "Environmental Research Letters",
    "PLOS ONE",
    "Nature Climate Change",
    "Proceedings of the Sim Conference",
)
TOTAL = 200


def has_preprint(result: SimResult) -> bool:
    return result.doi is not None and result.index % 10 == 0


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
            body["data"] = [self._record(query, r) for r in results]
            if offset + len(results) < TOTAL:
                body["next"] = offset + len(results)
        else:
            body["offset"] = 0  # as the real API answers a search without hits
        return json_page(json.dumps(body))

    def _record(self, query: str, r: SimResult) -> dict[str, Any]:
        paper_id = hashlib.sha1(f"s2|{query}|{r.index}".encode()).hexdigest()
        pdf = open_access_pdf(r)
        ids: dict[str, Any] = {"DOI": r.doi, "CorpusId": 100000 + r.index}
        if has_preprint(r):
            ids["ArXiv"] = arxiv_id_of(r)
        if has_pmid(r):
            ids["PubMed"] = pmid_of(r)
        return {
            "paperId": paper_id,
            "externalIds": ids,
            "url": f"https://www.semanticscholar.org/paper/{paper_id}",
            "title": noisy_title(r, 1),
            # Publishers that withhold abstracts leave it null.
            "abstract": None if r.index % 4 == 3 else r.snippet,
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
        journal = self._work(query, r, r.doi, venue(r), r.year)
        if has_pmid(r):
            journal["ids"]["pmid"] = f"https://pubmed.ncbi.nlm.nih.gov/{pmid_of(r)}"
        if not has_preprint(r):
            return [journal]
        arxiv_id = arxiv_id_of(r)
        preprint = self._work(
            query, r, f"10.48550/arxiv.{arxiv_id}", "arXiv (Cornell University)", r.year - 1
        )
        preprint["primary_location"]["landing_page_url"] = f"https://arxiv.org/abs/{arxiv_id}"
        preprint["type"] = "preprint"
        return [journal, preprint]

    def _work(
        self, query: str, r: SimResult, doi: str | None, source: str, year: int
    ) -> dict[str, Any]:
        number = int(hashlib.sha1(f"openalex|{query}|{doi or r.index}".encode()).hexdigest(), 16)
        work_id = f"https://openalex.org/W{number % 10**10}"
        ids: dict[str, str] = {"openalex": work_id}
        if doi:
            ids["doi"] = f"https://doi.org/{doi}"
        pdf = open_access_pdf(r)
        positions: dict[str, list[int]] = {}
        for position, word in enumerate(r.snippet.split()):
            positions.setdefault(word, []).append(position)
        return {
            "id": work_id,
            "doi": ids.get("doi"),
            "title": noisy_title(r, 2),
            "display_name": noisy_title(r, 2),
            "publication_year": year,
            "publication_date": f"{year}-03-01",
            "ids": ids,
            "primary_location": {
                "landing_page_url": ids.get("doi"),
                # Repository copies and unknown venues have no source.
                "source": {"display_name": source} if doi or r.index % 2 else None,
            },
            "type": "article",
            "authorships": [
                {"author_position": "first" if i == 0 else "middle", "author": {"display_name": n}}
                for i, n in enumerate(author_names(r))
            ],
            "abstract_inverted_index": positions or None,
            "best_oa_location": {"is_oa": True, "pdf_url": pdf} if pdf else None,
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
        if r.index % 3 == 0:
            text = escape(r.snippet, quote=False)
            item["abstract"] = f"<jats:title>Abstract</jats:title><jats:p>{text}</jats:p>"
        return item

    def captcha_page(self, query: str) -> SimPage:
        return _rate_limited({"status": "failed", "message": "Too many requests"})
