"""The simulator's citation graph and abstracts over loopback HTTP, as Semantic Scholar and
OpenAlex serve them, against the graph's documented rules (lyra_crawl.simulator.citations)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import requests

from lyra_crawl.engines.openalex import abstract_text
from lyra_crawl.simulator.citations import (
    CLASSIC,
    CORPUS_SIZE,
    OUTSIDE_BASE,
    OUTSIDE_SIZE,
    PaperKey,
    citations,
    graph_papers,
    references,
    unmatched,
)
from lyra_crawl.simulator.corpus import abstract_of, abstract_withheld, make_result
from lyra_crawl.simulator.engines.paper_ids import has_preprint, openalex_work_id, s2_paper_id
from tests.conftest import Simulator

QUERY = "coastal flooding"
# A corpus paper on the first search page that cites a paper with a preprint and an unmatched
# reference (checked in the first test), and a corpus paper with a DOI.
CITING = PaperKey(QUERY, 15)
WITH_DOI = PaperKey(QUERY, 25)
S2 = "/semantic_scholar/graph/v1/paper"


def get(simulator: Simulator, path: str, **params: Any) -> requests.Response:
    return requests.get(simulator.url + path, params=params, timeout=10, allow_redirects=False)


def searched(simulator: Simulator) -> Simulator:
    """`simulator` once it has answered a search for QUERY (ids resolve from then on)."""
    found = get(simulator, f"{S2}/search", query=QUERY, offset=0, limit=100).json()["data"]
    assert s2_paper_id(QUERY, CITING.number) in {paper["paperId"] for paper in found}
    return simulator


def s2_pages(simulator: Simulator, path: str, limit: int, **params: Any) -> list[dict[str, Any]]:
    """Every entry of a references or citations list, following `next` page by page."""
    entries: list[dict[str, Any]] = []
    offset = 0
    while True:
        body = get(simulator, path, offset=offset, limit=limit, **params).json()
        assert body["offset"] == offset and len(body["data"]) <= limit
        entries += body["data"]
        if "next" not in body:
            return entries
        assert body["next"] == offset + limit
        offset = body["next"]


def s2_cited_id(key: PaperKey) -> str | None:
    """The paperId Semantic Scholar names a cited paper by: its preprint's record if it has one,
    none for an unmatched reference."""
    if unmatched(key):
        return None
    return s2_paper_id(key.query, key.number, preprint=has_preprint(key.number))


def openalex_cited_id(key: PaperKey) -> str:
    return openalex_work_id(key.query, key.number, preprint=has_preprint(key.number))


def test_the_graph_follows_its_documented_rules() -> None:
    papers = graph_papers(QUERY)
    assert len(papers) == CORPUS_SIZE + OUTSIDE_SIZE
    for key in papers:
        cited = references(key)
        numbers = [target.number for target in cited]
        assert numbers == sorted(set(numbers)) and key.number not in numbers
        if key.outside:
            assert all(OUTSIDE_BASE <= n < key.number for n in numbers)
            assert len(numbers) <= 2 and not (unmatched(key) and numbers)
        else:
            even = key.number % 2 == 0
            assert sum(n < CORPUS_SIZE for n in numbers) <= 5
            assert sum(n >= OUTSIDE_BASE for n in numbers) <= 2 + even
            assert CLASSIC in numbers or not even
        for target in cited:
            assert key in citations(target)
    assert sum(len(citations(key)) for key in papers) == sum(len(references(k)) for k in papers)
    assert len(citations(PaperKey(QUERY, CLASSIC))) > 100
    kinds = [(has_preprint(t.number), unmatched(t)) for t in references(CITING)]
    assert (True, False) in kinds and (False, True) in kinds, kinds
    assert make_result(QUERY, WITH_DOI.number, on_topic=True).doi


def test_semantic_scholar_pages_references_and_citations_as_the_graph_says(
    start_simulator: Callable[..., Simulator],
) -> None:
    simulator = searched(start_simulator())
    paper_id = s2_paper_id(QUERY, CITING.number)

    refs = s2_pages(
        simulator, f"{S2}/{paper_id}/references", 2, fields="title,externalIds,isInfluential"
    )

    assert [entry["citedPaper"]["paperId"] for entry in refs] == [
        s2_cited_id(key) for key in references(CITING)
    ]
    for entry, key in zip(refs, references(CITING), strict=True):
        cited = entry["citedPaper"]
        assert entry["isInfluential"] is False and "contexts" not in entry
        assert set(cited) == {"paperId", "title", "externalIds"}
        if unmatched(key):
            # Only the title of a reference no record matched, as Semantic Scholar answers.
            assert cited["title"] and cited["externalIds"] is None
        elif has_preprint(key.number):
            # The same paper as corpus paper key.number, under its preprint's record.
            assert set(cited["externalIds"]) == {"ArXiv", "CorpusId"}
            assert cited["paperId"] != s2_paper_id(QUERY, key.number)

    classic = s2_paper_id(QUERY, CLASSIC)
    citers = s2_pages(simulator, f"{S2}/{classic}/citations", 100)
    assert [entry["citingPaper"]["paperId"] for entry in citers] == [
        s2_paper_id(QUERY, key.number) for key in citations(PaperKey(QUERY, CLASSIC))
    ]
    assert set(citers[0]["citingPaper"]) == {"paperId", "title"}  # the default fields
    # The same answer from another simulator process: nothing depends on the run.
    again = searched(start_simulator())
    path = f"{S2}/{paper_id}/references"
    assert get(again, path).content == get(simulator, path).content


def test_semantic_scholar_finds_a_paper_by_doi_and_refuses_what_it_cannot_answer(
    simulator: Simulator,
) -> None:
    searched(simulator)
    doi = make_result(QUERY, WITH_DOI.number, on_topic=True).doi

    paper = get(simulator, f"{S2}/DOI:{doi}", fields="externalIds,abstract,year").json()

    assert paper["paperId"] == s2_paper_id(QUERY, WITH_DOI.number)
    assert paper["externalIds"]["DOI"] == doi and paper["year"]
    unknown = get(simulator, f"{S2}/{'0' * 40}/references")
    assert unknown.status_code == 404 and "not found" in unknown.json()["error"]
    too_many = get(simulator, f"{S2}/{s2_paper_id(QUERY, 1)}/citations", limit=1001)
    assert too_many.status_code == 400 and "1000" in too_many.json()["error"]


def test_openalex_works_name_their_references_and_filters_page_the_graph(
    simulator: Simulator,
) -> None:
    searched(simulator)
    found = get(simulator, "/openalex/works", search=QUERY, page=1, **{"per-page": 100})
    works = {work["id"]: work for work in found.json()["results"]}
    work_id = openalex_work_id(QUERY, CITING.number)
    work = works[f"https://openalex.org/{work_id}"]

    expected = [openalex_cited_id(k) for k in references(CITING) if not unmatched(k)]
    assert [ref.removeprefix("https://openalex.org/") for ref in work["referenced_works"]] == (
        expected
    )
    assert work["cited_by_count"] == len(citations(CITING))
    assert get(simulator, f"/openalex/works/{work_id}").json() == work
    cited_by = get(simulator, "/openalex/works", filter=f"cited_by:{work_id}").json()
    assert [w["id"] for w in cited_by["results"]] == work["referenced_works"]

    classic = openalex_work_id(QUERY, CLASSIC)
    citing_ids = []
    for page in (1, 2, 3):
        body = get(
            simulator, "/openalex/works", filter=f"cites:{classic}", page=page, **{"per-page": 50}
        ).json()
        assert body["meta"]["count"] == len(citations(PaperKey(QUERY, CLASSIC)))
        citing_ids += [w["id"].removeprefix("https://openalex.org/") for w in body["results"]]
    assert citing_ids == [
        openalex_work_id(QUERY, k.number) for k in citations(PaperKey(QUERY, CLASSIC))
    ]

    two = f"{expected[-1]}|{work_id}"
    named = get(simulator, "/openalex/works", filter=f"openalex:{two}").json()["results"]
    assert [w["id"].removeprefix("https://openalex.org/") for w in named] == two.split("|")
    doi = make_result(QUERY, WITH_DOI.number, on_topic=True).doi
    by_doi = get(simulator, f"/openalex/works/doi:{doi}").json()
    assert by_doi["id"].endswith(openalex_work_id(QUERY, WITH_DOI.number))
    filtered = get(simulator, "/openalex/works", filter=f"doi:https://doi.org/{doi}").json()
    assert [w["id"] for w in filtered["results"]] == [by_doi["id"]]
    assert get(simulator, "/openalex/works/W1").status_code == 404
    bad = get(simulator, "/openalex/works", filter=f"cites:{work_id},type:article")
    assert bad.status_code == 400 and bad.json()["error"]


@pytest.mark.parametrize("engine", ["semantic_scholar", "openalex"])
def test_abstracts_rebuild_from_the_api_and_are_withheld_by_the_same_publishers(
    simulator: Simulator, engine: str
) -> None:
    if engine == "semantic_scholar":
        body = get(simulator, f"{S2}/search", query=QUERY, offset=0, limit=100).json()
        records = [(paper["title"], paper["abstract"]) for paper in body["data"]]
    else:
        params = {"search": QUERY, "page": 1, "per-page": 100}
        body = get(simulator, "/openalex/works", **params).json()
        records = [
            (work["title"], abstract_text(work["abstract_inverted_index"]))
            for work in body["results"]
            if work["type"] == "article"
        ]
    assert len(records) >= 90
    withheld = 0
    for title, abstract in records:
        number = int(title.removesuffix(".").removesuffix(" (extended abstract)").split()[-1])
        result = make_result(QUERY, number, on_topic=True)
        if abstract_withheld(result):
            withheld += 1
            assert abstract is None, title
        else:
            # Rebuilt word by word from OpenAlex's index: the very text, symbols included.
            assert abstract == abstract_of(result) and "± " in abstract, title
    assert 15 <= withheld <= 35
