"""The API engines' parsers on real captured responses: ../shared/realworld/api (read in place;
without the folder those tests skip with the reason) and the project's own
tests/data/realworld (other modules and endpoints, empty answers, error documents, page 2+).

Counts were taken from the JSON files themselves (len(data), len(results), len(items)).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome, ParseResult, SerpResult
from lyra_crawl.engines.parsing import parse_page
from tests.conftest import realworld_dir
from tests.realworld_fields import ROOTS, engine_of, fields_path, manifest

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


# The project's own real responses of the API engines (tests/data/realworld, provenance in its
# pages.json): other modules and endpoints, empty answers, error documents, later pages.
API_PAGES = {
    rel: entry
    for rel, entry in manifest("project").items()
    if CONFIG.engine(engine_of(rel, entry)).family != "html"
}
# file -> (the path the parser expected, what the body holds instead): both named in the detail.
FOREIGN_SHAPES: dict[str, tuple[str, str]] = {
    "api/semantic_scholar/s2py-author-search-turing-2024-12.json": (
        "expected data (a list of papers with paperId and title)",
        "the records have authorId, name",
    ),
    "api/semantic_scholar/s2py-recommendations-forpaper-2024-12.json": (
        "expected data",
        "the body has recommendedPapers",
    ),
    "api/semantic_scholar/s2py-paper-batch-authors-2024-12.json": (
        "expected data",
        "the body is a JSON list of 3",
    ),
    "api/semantic_scholar/s2py-paper-citations-offset0-2024-07.json": (
        "expected data",
        "the records have citingPaper",
    ),
    "api/semantic_scholar/s2py-paper-single-2024-12.json": (
        "expected data",
        "a single paper (2d5673caa9e6af3a7b82a43f19ee920992db07ad)",
    ),
    "api/semantic_scholar/s2py-search-fields-year-no-titles-2024-12.json": (
        "papers with paperId and title",
        "the records have paperId, year",
    ),
    "api/openalex/oapy-author-single-A5023888391-2025-06.json": (
        "expected results (a list of works) or a single work",
        "the body is https://openalex.org/A5023888391",
    ),
    "api/openalex/oapy-source-single-S137773608-2025-06.json": (
        "expected results",
        "the body is https://openalex.org/S137773608",
    ),
    "api/openalex/oapy-funder-single-F4320332161-2025-06.json": (
        "expected results",
        "the body is https://openalex.org/F4320332161",
    ),
    "api/crossref/habanero-members-list-2026-06.json": (
        "expected message-type work-list",
        "message-type member-list",
    ),
    "api/crossref/habanero-funders-list-2026-06.json": (
        "expected message-type work-list",
        "message-type funder-list",
    ),
    "api/crossref/habanero-prefix-single-2026-06.json": (
        "expected message-type work-list",
        "message-type prefix",
    ),
    "serp/wikipedia/androidapp-rest-related-pages-2018-08.json": (
        "expected query.search, or query.pages ranked by index",
        "the body has pages",
    ),
    "serp/wikidata/wdtk-wbgetentities-Q1-2015-09.json": (
        "expected search (a list, from wbsearchentities)",
        "the body has entities.Q1, success",
    ),
    "serp/pubmed/biopython-esummary-xml-pubmed-2026-01.xml": (
        "expected <eSearchResult> (esearch XML) or result.uids (esummary JSON)",
        "the body is <eSummaryResult>",
    ),
    "serp/pubmed/biopython-efetch-pubmedarticleset-2026-01.xml": (
        "expected <eSearchResult>",
        "the body is <PubmedArticleSet>",
    ),
    "serp/pubmed/biopython-espell-biopythooon-2026-01.xml": (
        "expected <eSearchResult>",
        "the body is <eSpellResult>",
    ),
}


def parse_project_page(rel: str) -> ParseResult:
    entry = API_PAGES[rel]
    body = (ROOTS["project"] / rel).read_bytes()
    spec = CONFIG.engine(engine_of(rel, entry))
    return parse_page(spec, body, entry.get("page", 1), status=entry.get("status", 200))


def project_outcome(entry: dict) -> Outcome:
    if entry.get("outcome"):
        return Outcome(entry["outcome"])
    if entry["blocked"]:
        return Outcome(entry["block_kind"])
    if entry.get("error"):
        return Outcome.ERROR
    return Outcome.OK if entry["organic"] else Outcome.EMPTY


def test_every_project_api_page_has_an_entry_and_a_fields_file() -> None:
    folders = {Path(rel).parent for rel in API_PAGES}
    files = {
        path.relative_to(ROOTS["project"]).as_posix()
        for folder in folders
        for path in (ROOTS["project"] / folder).iterdir()
    }

    assert files == set(API_PAGES)
    assert all(fields_path("project", rel).is_file() for rel in API_PAGES)
    assert set(FOREIGN_SHAPES) == {
        rel for rel, entry in API_PAGES.items() if entry.get("outcome") == "layout_changed"
    }


@pytest.mark.parametrize("rel", sorted(API_PAGES))
def test_project_api_page_parses_as_its_entry_says(rel: str) -> None:
    entry = API_PAGES[rel]

    result = parse_project_page(rel)

    assert result.outcome is project_outcome(entry), result.detail
    assert len(result.results) == entry["organic"]
    assert result.blocked is entry["blocked"]


@pytest.mark.parametrize("rel", sorted(FOREIGN_SHAPES))
def test_another_modules_answer_is_layout_changed_naming_the_path_expected(rel: str) -> None:
    expected, found = FOREIGN_SHAPES[rel]

    result = parse_project_page(rel)

    assert result.outcome is Outcome.LAYOUT_CHANGED
    assert expected in result.detail and found in result.detail, result.detail
    assert not result.results


def test_a_generator_answer_beside_a_one_row_list_search_is_read_whole() -> None:
    # The Android app asks generator=prefixsearch (20 pages) plus list=search srlimit=1 (a
    # suggestion): reading query.search gave 1 result where the answer holds 20.
    result = parse_project_page(
        "serp/wikipedia/androidapp-generator-prefixsearch-with-list-search-2017-06.json"
    )

    assert result.outcome is Outcome.OK
    assert [found.title for found in result.results[:3]] == [
        "Narthecium",
        "Amitriptyline",
        "Abama Open de Canarias",
    ]
    assert len(result.results) == 20


@pytest.mark.parametrize(
    "rel",
    [
        "serp/wikipedia/androidapp-list-search-empty-2017-06.json",
        "serp/wikipedia/androidapp-generator-no-pages-warning-2017-05.json",
        "serp/wikidata/wdtk-wbsearchentities-empty-2017-06.json",
        "serp/arxiv/arxivpy-id-0000.0000-empty-2026-04.atom.xml",
    ],
)
def test_an_empty_answer_of_the_module_read_is_empty(rel: str) -> None:
    assert parse_project_page(rel).outcome is Outcome.EMPTY


def test_markup_where_an_api_answers_json_is_layout_changed() -> None:
    page = realworld_dir() / "serp/duckduckgo/lofi-ddg-html-foo-2025-04.html"

    result = parse_page(CONFIG.engine("openalex"), page.read_bytes(), 1)

    assert result.outcome is Outcome.LAYOUT_CHANGED
    assert "the body is markup, not JSON" in result.detail


def test_a_cut_off_json_answer_is_an_error_not_a_layout() -> None:
    body = (ROOTS["project"] / "api/crossref/habanero-works-sample2-2026-06.json").read_bytes()

    result = parse_page(CONFIG.engine("crossref"), body[: len(body) // 2], 1)

    assert result.outcome is Outcome.ERROR
    assert "body is not JSON" in result.detail
