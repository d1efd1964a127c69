"""Scholarly APIs: arXiv's Atom feed and PubMed's two-step esearch + esummary."""

from __future__ import annotations

import json
import threading
from html import escape

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import OffsetPaged, SimPage, json_page


def arxiv_id_of(result: SimResult) -> str:
    """The arXiv id of a result's preprint (every result has one in the arXiv simulator)."""
    return arxiv_id(result.index)


def arxiv_id(index: int) -> str:
    return f"2401.{index:05d}"


def pmid_of(result: SimResult) -> str:
    return str(30000000 + result.index)


def author_names(result: SimResult) -> list[str]:
    return [f"{given} {family}" for given, family in result.authors]


class Arxiv(OffsetPaged):
    """export.arxiv.org/api/query: Atom, paged by `start` / `max_results`."""

    name = "arxiv"
    page_param = "start"

    def query(self, params: dict[str, str]) -> str:
        return params.get("search_query", "").removeprefix("all:")

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        entries = []
        for r in results:
            preprint = arxiv_id_of(r)
            doi = f"<arxiv:doi>{escape(r.doi)}</arxiv:doi>" if r.doi else ""
            authors = "".join(
                f"<author><name>{escape(name)}</name></author>" for name in author_names(r)
            )
            entries.append(
                f"<entry><id>http://arxiv.org/abs/{preprint}v2</id>"
                f"<title>{escape(r.title)}</title><summary>{escape(r.snippet)}</summary>"
                f"<published>{r.year}-01-15T10:00:00Z</published>"
                f'<link href="https://arxiv.org/abs/{preprint}v2" rel="alternate" '
                f'type="text/html"/>{doi}{authors}</entry>'
            )
        body = (
            "<?xml version='1.0' encoding='UTF-8'?>\n"
            '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
            'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">'
            f"<title>arXiv Query: search_query=all:{escape(query)}</title>"
            "<opensearch:totalResults>200</opensearch:totalResults>"
            f"<opensearch:startIndex>{(page_number - 1) * self.step}</opensearch:startIndex>"
            f"<opensearch:itemsPerPage>{self.per_page}</opensearch:itemsPerPage>"
            f"{''.join(entries)}</feed>"
        )
        return SimPage(200, body, "application/atom+xml; charset=utf-8")

    def captcha_page(self, query: str) -> SimPage:
        return SimPage(503, "Rate exceeded.", "text/plain", (("Retry-After", "3"),))


class PubMed(OffsetPaged):
    """eutils.ncbi.nlm.nih.gov: esearch lists PMIDs, esummary describes them (JSON)."""

    name = "pubmed"
    per_page = 20
    page_param = "retstart"
    step = 20
    query_param = "term"

    def __init__(self) -> None:
        # PMIDs handed out by esearch, for esummary to describe; the server is threaded.
        self._issued: dict[str, SimResult] = {}
        self._lock = threading.Lock()

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        if not path.endswith("/esummary.fcgi"):
            return None
        ids = [pmid for pmid in params.get("id", "").split(",") if pmid]
        result: dict[str, object] = {"uids": ids}
        with self._lock:
            known = {pmid: self._issued.get(pmid) for pmid in ids}
        for pmid, found in known.items():
            if found is None:
                result[pmid] = {"uid": pmid, "error": "cannot get document summary"}
                continue
            article_ids = [{"idtype": "pubmed", "value": pmid}]
            if found.doi:
                article_ids.append({"idtype": "doi", "value": found.doi})
            result[pmid] = {
                "uid": pmid,
                "pubdate": f"{found.year} Jan 15",
                "source": "Sim J",
                "fulljournalname": "Journal of Simulated Results",
                "title": found.title,
                "authors": [
                    {"name": f"{family} {given[0]}", "authtype": "Author"}
                    for given, family in found.authors
                ],
                "articleids": article_ids,
            }
        return json_page(json.dumps({"header": {"type": "esummary"}, "result": result}))

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        issued = {pmid_of(r): r for r in results}
        with self._lock:
            self._issued.update(issued)
        ids = "".join(f"<Id>{pmid}</Id>" for pmid in issued)
        body = (
            '<?xml version="1.0" encoding="UTF-8" ?>\n'
            "<eSearchResult><Count>200</Count>"
            f"<RetMax>{len(issued)}</RetMax><RetStart>{(page_number - 1) * self.step}</RetStart>"
            f"<IdList>{ids}</IdList><QueryTranslation>{escape(query)}</QueryTranslation>"
            "</eSearchResult>"
        )
        return SimPage(200, body, "text/xml; charset=utf-8")

    def captcha_page(self, query: str) -> SimPage:
        body = {"error": "API rate limit exceeded", "count": "4"}
        return SimPage(429, json.dumps(body), "application/json", (("Retry-After", "1"),))
