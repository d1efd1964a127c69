"""What a task collected, as documents: canonical papers and SERP results. Pure.

A paper is read from its title and, where its evidence is its abstract (from an API or read
from its landing page), that abstract; a SERP result that no paper took in, from its title and
snippet. Their facets are what the store knows of them: year, venue, source(s), attribution,
evidence (lyra_crawl.papers.facets, as exports read them), and the site a result is on.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from lyra_crawl.papers.facets import FacetValue, paper_facets
from lyra_crawl.records import StoredItem, StoredPaper
from lyra_crawl.retrieval.documents import Document

PAPER_PREFIX = "paper:"


def paper_document(paper: StoredPaper) -> Document:
    text = (paper.abstract or "") if paper.evidence == "abstract" else ""
    return Document(f"{PAPER_PREFIX}{paper.id}", paper.title, text, paper_facets(paper))


def stored_paper_id(document_id: str) -> int | None:
    """The paper a stored document is (None: a search result)."""
    number = document_id.removeprefix(PAPER_PREFIX)
    return int(number) if number != document_id and number.isdigit() else None


def result_document(item: StoredItem) -> Document | None:
    """A SERP result no paper took in; None for an API record or a result a paper holds."""
    if item.kind != "serp" or item.paper_id is not None:
        return None
    facets: dict[str, FacetValue] = {
        "source": (item.source,),
        "attribution": "serp_only",
        "evidence": "snippet",
        "site": _site(item.url),
    }
    if item.year is not None:
        facets["year"] = item.year
    return Document(f"result:{item.normalized_url or item.url}", item.title, item.snippet, facets)


def _site(url: str) -> str:
    host = (urlsplit(url).hostname or "").lower()
    return host.removeprefix("www.")


def collected_documents(
    papers: Iterable[StoredPaper], items: Iterable[StoredItem]
) -> list[Document]:
    """Each paper and each result once (a result several queries found is one document)."""
    found: dict[str, Document] = {}
    for paper in papers:
        doc = paper_document(paper)
        found.setdefault(doc.id, doc)
    for item in items:
        result = result_document(item)
        if result is not None:
            found.setdefault(result.id, result)
    return list(found.values())
