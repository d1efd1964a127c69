"""The paper APIs' parsers on their real captured responses in ../shared/realworld/api.

Counts were taken from the JSON files themselves (len(data), len(results), len(items)). The
files are read in place; without the folder these tests skip with the reason.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome, ParseResult, SerpResult
from lyra_crawl.engines.parsing import parse_page
from tests.conftest import realworld_dir

CONFIG = load_config()
SOURCES = ("semantic_scholar", "openalex", "crossref")

# file -> (page asked for, HTTP status, outcome, records)
CASES: dict[str, tuple[int, int, Outcome, int]] = {
    "semantic_scholar/s2_search_turing_offset0_limit100.json": (1, 200, Outcome.OK, 100),
    "semantic_scholar/s2_search_turing_offset100_limit100.json": (2, 200, Outcome.OK, 100),
    "semantic_scholar/s2_search_empty_result.json": (1, 200, Outcome.EMPTY, 0),
    "semantic_scholar/s2_error_400_bad_fields.json": (1, 400, Outcome.ERROR, 0),
    "semantic_scholar/s2_paper_search_match_fullfields_2015.json": (1, 200, Outcome.OK, 1),
    "openalex/openalex_works_search_ml_public_health_per_page200.json": (1, 200, Outcome.OK, 49),
    "openalex/openalex_works_filter_title.search_1result.json": (1, 200, Outcome.OK, 1),
    # A single-work lookup (/works/W…) is read as a page of one.
    "openalex/openalex_work_W2741809807_single.json": (1, 200, Outcome.OK, 1),
    "crossref/crossref_works_query_ecology_rows2.json": (1, 200, Outcome.OK, 2),
    "crossref/crossref_works_query_widget_cursor_star.json": (1, 200, Outcome.OK, 20),
}


def parse_api_file(rel: str, page: int | None = None) -> ParseResult:
    asked, status, _, _ = CASES[rel]
    engine = rel.split("/", 1)[0]
    body = (realworld_dir() / "api" / rel).read_bytes()
    return parse_page(CONFIG.engine(engine), body, page or asked, status=status)


def results_of(rel: str) -> tuple[SerpResult, ...]:
    return parse_api_file(rel).results


def test_every_captured_api_response_has_a_case() -> None:
    folder = realworld_dir() / "api"
    files = {
        str(path.relative_to(folder))
        for source in SOURCES
        for path in (folder / source).iterdir()
        if path.is_file()
    }
    assert files == set(CASES)


@pytest.mark.parametrize("rel", sorted(CASES))
def test_api_response_parses_to_its_records(rel: str) -> None:
    _, _, outcome, count = CASES[rel]
    result = parse_api_file(rel)

    assert result.outcome is outcome, result.detail
    assert len(result.results) == count
    for found in result.results:
        parts = urlsplit(found.url)
        assert parts.scheme == "https" and parts.hostname, found.url
        assert found.title and found.source_id
        assert found.doi is None or (found.doi.startswith("10.") and found.doi == found.doi.lower())
    assert len({found.source_id for found in result.results}) == count


def test_an_empty_semantic_scholar_search_is_empty_not_an_error() -> None:
    result = parse_api_file("semantic_scholar/s2_search_empty_result.json")

    assert result.outcome is Outcome.EMPTY and not result.blocked


def test_a_semantic_scholar_400_is_an_error_with_its_message() -> None:
    result = parse_api_file("semantic_scholar/s2_error_400_bad_fields.json")

    assert result.outcome is Outcome.ERROR
    assert "Unrecognized or unsupported fields: [unknown]" in result.detail
    assert "HTTP 400" in result.detail


def test_semantic_scholar_records_without_url_link_to_their_paper_page() -> None:
    first = results_of("semantic_scholar/s2_search_turing_offset0_limit100.json")[0]

    assert first.url == (
        "https://www.semanticscholar.org/paper/7cbc2a7843411a1768ab762930707af0a3c33a19"
    )
    assert first.source_id == "7cbc2a7843411a1768ab762930707af0a3c33a19"
    assert (first.doi, first.authors, first.year, first.abstract) == (None, (), None, None)


def test_semantic_scholar_full_record_gives_ids_authors_year_and_journal_as_venue() -> None:
    (found,) = results_of("semantic_scholar/s2_paper_search_match_fullfields_2015.json")

    assert found.doi == "10.1063/1.4938384"
    assert found.authors == ("Michael Skarlinski", "D. Quesnel")
    assert (found.year, found.venue) == (2015, "Journal of Applied Physics")


def test_a_semantic_scholar_page_at_another_offset_is_a_soft_block() -> None:
    result = parse_api_file("semantic_scholar/s2_search_turing_offset100_limit100.json", page=1)

    assert result.outcome is Outcome.SOFT_BLOCK
    assert "page 2" in result.detail


def test_openalex_dois_are_bare_and_pmids_come_from_ids() -> None:
    results = results_of("openalex/openalex_works_search_ml_public_health_per_page200.json")
    first = results[0]

    assert first.doi == "10.4081/gh.2014.294"
    assert first.pmid == "25599636"
    assert sum(1 for found in results if found.pmid) == 16
    assert sum(1 for found in results if found.doi) == 47
    assert not any(found.doi and "doi.org" in found.doi for found in results)
    assert first.source_id == "W2068311567"


def test_openalex_abstracts_are_rebuilt_in_word_order() -> None:
    results = results_of("openalex/openalex_works_search_ml_public_health_per_page200.json")
    first = results[0]

    assert first.abstract is not None
    assert first.abstract.startswith("Existing climate classification has not been designed for")
    assert first.snippet == first.abstract
    assert sum(1 for found in results if found.abstract) == 46


def test_open_access_pdfs_are_the_ones_the_apis_name() -> None:
    works = results_of("openalex/openalex_works_search_ml_public_health_per_page200.json")
    (closed,) = results_of("semantic_scholar/s2_paper_search_match_fullfields_2015.json")

    # best_oa_location.pdf_url, counted in the file: 23 of its 49 works have one.
    assert sum(1 for found in works if found.pdf_url) == 23
    assert (
        works[0].pdf_url == "https://www.geospatialhealth.net/index.php/gh/article/download/294/291"
    )
    # Semantic Scholar's closed paper: openAccessPdf {"url": "", "status": "CLOSED"}.
    assert closed.pdf_url is None


def test_openalex_authors_year_and_venue() -> None:
    first = results_of("openalex/openalex_works_search_ml_public_health_per_page200.json")[0]

    assert first.authors[:2] == ("Alexander Liss", "Magaly Koch")
    assert (first.year, first.venue) == (2014, "Geospatial Health")
    assert first.url == "https://doi.org/10.4081/gh.2014.294"


def test_an_openalex_single_work_is_one_record() -> None:
    (work,) = results_of("openalex/openalex_work_W2741809807_single.json")

    assert (work.source_id, work.doi, work.pmid) == (
        "W2741809807",
        "10.7717/peerj.4375",
        "29456894",
    )
    assert (work.year, work.venue) == (2018, "PeerJ")


def test_an_openalex_page_other_than_the_one_asked_for_is_a_soft_block() -> None:
    result = parse_api_file(
        "openalex/openalex_works_search_ml_public_health_per_page200.json", page=2
    )

    assert result.outcome is Outcome.SOFT_BLOCK


def test_crossref_titles_and_venues_come_from_their_lists() -> None:
    first, second = results_of("crossref/crossref_works_query_ecology_rows2.json")

    assert (first.title, first.venue, first.year) == ("Communicating Ecology", "Ecology", 2022)
    assert first.authors == ()
    assert second.authors == ("André Kessler",)
    assert (first.source_id, first.url) == (
        "10.1093/obo/9780199830060-0238",
        "https://doi.org/10.1093/obo/9780199830060-0238",
    )


def test_crossref_abstracts_lose_their_markup_and_dateless_works_have_no_year() -> None:
    results = results_of("crossref/crossref_works_query_widget_cursor_star.json")
    by_doi = {found.doi: found for found in results}

    undated = by_doi["10.1007/978-1-4302-0197-7_9"]
    assert (undated.title, undated.year) == ("Widget Mania: Using a GUI Widget Framework", None)
    posted = by_doi["10.59350/7mtwq-q3661"]
    assert posted.venue is None  # no container-title
    assert posted.abstract and posted.abstract.startswith("In addition to this Swing-based")
    assert "<" not in posted.abstract
    assert by_doi["10.32614/cran.package.diffviewer"].authors == (
        "Hadley Wickham",
        "Joshua Kunst",
        "Winston Chang",
    )
