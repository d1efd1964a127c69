"""A query's results gathered into papers (papers.collector): results at one URL are one paper."""

from __future__ import annotations

import pytest

from lyra_crawl.papers.canonical import PaperRecord
from lyra_crawl.papers.collector import QueryPapers

URL = "https://www.sciencedirect.com/science/article/pii/s0016706119"
API = PaperRecord(
    source="openalex",
    kind="api",
    url=URL,
    title="Peat carbon flux in boreal bogs",
    doi="10.1016/j.geoderma.2019.01",
    year=2019,
    authors=("M. Laine",),
)
# The engine's snippet title of the same page: no identifier, a site name after the title.
WEB = PaperRecord(
    source="duckduckgo",
    kind="serp",
    url=URL,
    title="Peat carbon flux in boreal bogs - ScienceDirect",
)
OTHER_WEB = PaperRecord(
    source="duckduckgo", kind="serp", url="https://blog.example/peat", title="Why peat matters"
)


@pytest.mark.parametrize("order", [(API, WEB), (WEB, API)], ids=["api first", "web first"])
def test_a_web_result_at_the_url_of_an_api_record_is_that_paper_found_by_both(
    order: tuple[PaperRecord, PaperRecord],
) -> None:
    papers = QueryPapers()
    for record in order:
        papers.add(URL, record)
    papers.add(OTHER_WEB.url, OTHER_WEB)

    merged = papers.merged()

    ((paper, urls),) = merged.papers
    assert paper.attribution == "both"
    assert paper.sources == {"openalex", "duckduckgo"}
    assert paper.doi == API.doi and paper.title == API.title
    assert urls == [URL]
    assert merged.attribution == {"both": 1, "api_only": 0, "serp_only": 0}
    # One paper at one URL: one fused rank, the first of both sources' lists.
    assert merged.fused_ranks[URL] == 1


def test_records_at_one_url_whose_dois_disagree_stay_two_papers() -> None:
    papers = QueryPapers()
    papers.add(URL, API)
    papers.add(
        URL,
        PaperRecord(
            source="crossref",
            kind="api",
            url=URL,
            title="Erratum",
            doi="10.1016/j.geoderma.2019.99",
        ),
    )

    assert sorted(p.doi for p, _ in papers.merged().papers) == sorted(
        [API.doi, "10.1016/j.geoderma.2019.99"]
    )


def test_web_results_without_identifiers_at_other_urls_make_no_paper() -> None:
    papers = QueryPapers()
    papers.add(WEB.url, WEB)
    papers.add(OTHER_WEB.url, OTHER_WEB)

    assert papers.merged().papers == []
