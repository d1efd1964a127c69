"""Every captured real page in ../shared/realworld/serp parses as its expected.json entry says.

The pages are read in place (never copied into the project); without the folder these tests
skip with the reason.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import pytest

from lyra_crawl.config import PARSER_HOOKS, load_config
from lyra_crawl.engines.base import Outcome, ParseResult, SerpResult
from lyra_crawl.engines.blocks import repeated_page
from lyra_crawl.engines.parsing import HOOKS, parse_page
from tests.conftest import REALWORLD_DIR, realworld_dir
from tests.realworld_fields import PROJECT_DIR

CONFIG = load_config()
# Click-tracking wrappers that must never reach a stored result.
WRAPPERS = (("bing.com", "/ck/a"), ("duckduckgo.com", "/l/"), ("google.com", "/url"))


def _cases() -> list:
    expected = REALWORLD_DIR / "expected.json"
    if not expected.is_file():
        reason = f"realworld pages not found at {REALWORLD_DIR} (set LYRA_REALWORLD_DIR)"
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=reason))]
    entries = json.loads(expected.read_text(encoding="utf-8"))
    return [pytest.param(rel, entry, id=rel) for rel, entry in sorted(entries.items())]


def expected_outcome(entry: dict) -> Outcome:
    if entry["blocked"]:
        return Outcome(entry["block_kind"])
    if entry.get("error"):
        return Outcome.ERROR
    return Outcome.OK if entry["organic"] else Outcome.EMPTY


def parse_file(rel: str, entry: dict, page: int | None = None) -> ParseResult:
    body = (realworld_dir() / rel).read_bytes()
    return parse_page(CONFIG.engine(entry["engine"]), body, page or entry.get("page", 1))


@pytest.mark.parametrize(("rel", "entry"), _cases())
def test_realworld_page_matches_expected(rel: str, entry: dict) -> None:
    result = parse_file(rel, entry)

    assert result.outcome == expected_outcome(entry), result.detail
    assert len(result.results) == entry["organic"]
    for found in result.results:
        parts = urlsplit(found.url)
        assert parts.scheme in ("http", "https") and parts.hostname, found.url
        host = parts.hostname or ""
        assert not any(host.endswith(h) and parts.path.startswith(p) for h, p in WRAPPERS)
        # A page with a follow-up (PubMed's esearch) carries ids until esummary completes it.
        assert found.title or (result.follow_up and found.pmid), found


def test_every_captured_page_has_an_expected_entry() -> None:
    folder = realworld_dir()
    entries = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    files = {str(p.relative_to(folder)) for p in (folder / "serp").rglob("*") if p.is_file()}
    assert files == set(entries)


def google_cases() -> list:
    return [case for case in _cases() if case.values[1] and case.values[1]["engine"] == "google"]


@pytest.mark.parametrize(("rel", "entry"), google_cases())
def test_google_results_survive_a_class_rename(rel: str, entry: dict) -> None:
    body = (realworld_dir() / rel).read_bytes()
    renamed = re.sub(rb'class="[^"]*"', b'class="x1"', body)

    result = parse_page(CONFIG.engine("google"), renamed, entry.get("page", 1))

    assert result.outcome == expected_outcome(entry)
    assert len(result.results) == entry["organic"]


# The project's Google pages with modules in #rso, and how many title links each module holds:
# an answer box's or module's link is no result, by the page's structure alone.
GOOGLE_MODULE_PAGES = {
    "codechallenge-google-paa-answers-actors-2022-11.html": 4,
    "codechallenge-google-paa-answers-ads-serp-api-2020-05.html": 4,
    "codechallenge-google-paa-top-stories-prime-ministers-2023-07.html": 4,
    "codechallenge-google-paa-top-stories-xbox-2024-03.html": 4,
    "serpparser-google-featured-snippet-2021-05.html": 1,
    "serpparser-google-kp-wholepage-matrix-2023-05.html": 0,
    "codechallenge-google-local-pack-coffee-2023-07.html": 0,
    "codechallenge-google-sitelinks-ferrari-2022-02.html": 0,
    "codechallenge-google-video-results-calculator-2023-07.html": 0,
    "wolfertamer-google-paa-answers-movies-spielberg-2025-11.html": 2,
    "wolfertamer-google-things-to-know-dictionary-test-2025-11.html": 2,
}


@pytest.mark.parametrize(("name", "in_modules"), sorted(GOOGLE_MODULE_PAGES.items()))
def test_google_module_links_are_no_results_whatever_the_class_names(name, in_modules) -> None:
    body = (PROJECT_DIR / "serp" / "google" / name).read_bytes()
    renamed = re.sub(rb'class="[^"]*"', b'class="x1"', body)

    result = parse_page(CONFIG.engine("google"), body, 1)
    after_rename = parse_page(CONFIG.engine("google"), renamed, 1)

    assert result.outcome is Outcome.OK
    assert result.dropped.get("module", 0) == in_modules
    # Snippets are found by class names as a fallback; the list of results is not.
    assert [(r.url, r.title) for r in after_rename.results] == [
        (r.url, r.title) for r in result.results
    ]


@pytest.mark.parametrize(
    ("engine", "root", "rel", "status", "challenge"),
    [
        (
            "brave",
            "shared",
            "serp/duckduckgo/celina-ddg-lite-anomaly-captcha-2026-07.html",
            200,
            "challenge-form",
        ),
        (
            "mojeek",
            "shared",
            "serp/bing/wsm-bing-captcha-one-last-step-2026-04.html",
            200,
            "captcha",
        ),
        (
            "startpage",
            "project",
            "serp/google/unlimproxy-google-sorry-captcha-2026-07.html",
            403,
            "captcha-form",
        ),
    ],
)
def test_a_challenge_no_marker_of_the_engine_names_is_a_captcha_by_its_challenge(
    engine, root, rel, status, challenge
) -> None:
    path = (REALWORLD_DIR if root == "shared" else PROJECT_DIR) / rel
    if not path.is_file():
        pytest.skip(f"real page not found at {path} (set LYRA_REALWORLD_DIR)")

    result = parse_page(CONFIG.engine(engine), path.read_bytes(), 1, status=status)

    assert result.outcome is Outcome.CAPTCHA
    assert challenge in result.detail


def test_arxiv_error_feed_is_an_error_even_with_status_200() -> None:
    rel = "serp/arxiv/arxivpy-id-abc-error-http400-2026-04.atom.xml"
    result = parse_file(rel, {"engine": "arxiv"})

    assert result.outcome is Outcome.ERROR
    assert "incorrect id format" in result.detail


def test_arxiv_ids_lose_their_version_and_keep_the_doi() -> None:
    rel = "serp/arxiv/arxivpy-q-testing-start0-max10-2026-04.atom.xml"
    first = parse_file(rel, {"engine": "arxiv"}).results[0]

    assert (first.arxiv_id, first.url) == ("2202.12139", "https://arxiv.org/abs/2202.12139")
    # Lower-case, as every source gives DOIs (they are case-insensitive).
    assert first.doi == "10.1109/icstw55395.2022.00035"


def test_arxiv_entries_carry_authors_year_and_journal_ref() -> None:
    rel = "serp/arxiv/arxivpy-q-testing-start0-max10-2026-04.atom.xml"
    results = parse_file(rel, {"engine": "arxiv"}).results
    first = results[0]

    assert first.authors == ("Mohit Kumar Ahuja", "Arnaud Gotlieb", "Helge Spieker")
    assert (first.year, first.source_id) == (2022, "2202.12139")
    assert first.venue and first.venue.startswith("Artificial Intelligence in Software Testing")
    assert first.abstract == first.snippet
    assert results[-1].venue is None  # no journal_ref: a preprint only


def test_pubmed_esearch_page_asks_esummary_for_its_ids() -> None:
    rel = "serp/pubmed/biopython-esearch-pubmed-cancer-100ids-2025-11.xml"
    result = parse_file(rel, {"engine": "pubmed"})

    assert result.follow_up is not None
    url = urlsplit(result.follow_up.url)
    assert (url.hostname, url.path) == ("eutils.ncbi.nlm.nih.gov", "/entrez/eutils/esummary.fcgi")
    assert "41297076%2C41297074" in url.query
    assert [r.pmid for r in result.results[:2]] == ["41297076", "41297074"]


@pytest.mark.parametrize(
    ("rel", "engine", "asked", "shown"),
    [
        ("serp/bing/sescraper-bing-test-keyword-page2-2020-01.html", "bing", 3, 2),
        ("serp/google/sescraper-google-test-keyword-page2-2020-01.html", "google", 1, 2),
        ("serp/arxiv/arxivpy-q-testing-start0-max10-2026-04.atom.xml", "arxiv", 2, 1),
    ],
)
def test_a_page_number_other_than_the_one_asked_for_is_a_soft_block(rel, engine, asked, shown):
    result = parse_file(rel, {"engine": engine}, page=asked)

    assert result.outcome is Outcome.SOFT_BLOCK
    assert f"page {shown}" in result.detail and not result.results


def test_a_page_repeating_the_previous_one_is_a_soft_block() -> None:
    results = (SerpResult("https://a.example/", "A"), SerpResult("https://b.example/", "B"))
    page = ParseResult(outcome=Outcome.OK, results=results)

    assert repeated_page(None, page) is page
    assert repeated_page(["https://a.example/"], page) is page
    repeated = repeated_page(["https://a.example/", "https://b.example/"], page)
    assert repeated.outcome is Outcome.SOFT_BLOCK and repeated.blocked


def test_every_named_parser_has_a_module() -> None:
    assert set(HOOKS) == set(PARSER_HOOKS)


def test_every_html_engine_has_parse_rules_and_every_api_engine_a_parser() -> None:
    for spec in CONFIG.engines.values():
        if spec.family == "html":
            assert all(layout.results for layout in spec.parse), spec.name
            assert spec.no_results and (spec.no_results.body_contains or spec.no_results.xpath)
        else:
            assert spec.parser, spec.name
