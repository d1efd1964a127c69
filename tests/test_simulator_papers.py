"""The simulated paper APIs over loopback HTTP, read by the crawler's own request and parsers.

They must overlap the SERP engines' results for the same query the way real sources do: same
DOIs, noisy titles, preprint / journal pairs.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome, ParseResult, SerpResult
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.engines.request import build_page_request
from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.papers.identifiers import normalize_doi
from tests.conftest import Simulator

CONFIG = load_config()
QUERY = "coastal flooding"
SUFFIX = " (extended abstract)"


def fetch(simulator: Simulator, engine: str, page: int) -> ParseResult:
    spec = CONFIG.engine(engine)
    request = build_page_request(spec, QUERY, page)
    url = route_to_simulator(request.url, engine, simulator.url)
    with urllib.request.urlopen(url, timeout=10) as response:
        body = response.read()
    return parse_page(spec, body, page, url=request.url)


def serp_results(simulator: Simulator) -> list[SerpResult]:
    """Qwant's five pages: the first 50 results of the query."""
    return [found for page in range(1, 6) for found in fetch(simulator, "qwant", page).results]


def title_key(title: str) -> str:
    """A title with the simulated noise taken out (what a fuzzy match sees through)."""
    return re.sub(r"[^a-z0-9]+", " ", title.lower().removesuffix(SUFFIX)).strip()


def test_paper_apis_give_the_serp_results_dois_and_titles(simulator: Simulator) -> None:
    serp = serp_results(simulator)
    # SERP engines show a paper's DOI as its doi.org URL.
    serp_dois = {doi for found in serp if (doi := normalize_doi(found.url))}
    serp_titles = {title_key(found.title) for found in serp}
    assert serp_dois

    for engine in ("semantic_scholar", "openalex", "crossref"):
        papers = fetch(simulator, engine, 1)
        assert papers.outcome is Outcome.OK, (engine, papers.detail)
        dois = {found.doi for found in papers.results}
        titles = {title_key(found.title) for found in papers.results}
        if engine == "openalex":
            # Preprints take slots of their own, pushing a few results off the page.
            assert len(serp_dois & dois) >= 0.8 * len(serp_dois)
            assert len(serp_titles & titles) >= 0.8 * len(serp_titles)
        else:
            assert serp_dois <= dois and serp_titles <= titles, engine
        exact = {found.title for found in papers.results} & {found.title for found in serp}
        assert len(exact) < len(serp), f"{engine} titles carry no noise"
        assert all(found.authors for found in papers.results), engine
        years = [found.year for found in papers.results]
        # Crossref gives some works no date at all ([[null]]), as the real one does.
        assert None in years if engine == "crossref" else all(years), engine


def test_preprint_and_journal_versions_pair_up(simulator: Simulator) -> None:
    s2 = fetch(simulator, "semantic_scholar", 1).results
    openalex = fetch(simulator, "openalex", 1).results
    both = [found for found in s2 if found.doi and found.arxiv_id]
    assert both

    works = {found.doi: found for found in openalex}
    pairs = [
        (works[paper.doi], works[f"10.48550/arxiv.{paper.arxiv_id}"], paper)
        for paper in both
        if paper.doi in works and f"10.48550/arxiv.{paper.arxiv_id}" in works
    ]
    assert len(pairs) >= len(both) // 2
    for journal, preprint, paper in pairs:
        assert (
            preprint.arxiv_id == paper.arxiv_id and preprint.venue == "arXiv (Cornell University)"
        )
        assert preprint.source_id != journal.source_id
        assert title_key(preprint.title) == title_key(journal.title)
    assert len(openalex) == CONFIG.engine("openalex").results_per_page


def test_paper_api_pages_are_deterministic_and_shown_as_asked(simulator: Simulator) -> None:
    for engine in ("semantic_scholar", "openalex", "crossref"):
        first = fetch(simulator, engine, 2)
        again = fetch(simulator, engine, 2)
        assert first.outcome is Outcome.OK, (engine, first.detail)
        assert first.results == again.results


def test_semantic_scholar_past_its_window_is_a_400_error(simulator: Simulator) -> None:
    url = f"{simulator.url}/semantic_scholar/graph/v1/paper/search?query=x&offset=950&limit=100"
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(url, timeout=10)
    spec = CONFIG.engine("semantic_scholar")

    result = parse_page(spec, answer.value.read(), 10, status=answer.value.code)

    assert result.outcome is Outcome.ERROR
    assert "limit and/or offset is not available" in result.detail


def test_a_malformed_page_is_an_error_saying_why(
    start_simulator: Callable[..., Simulator],
) -> None:
    simulator = start_simulator("--malformed-at", "openalex:2")

    assert fetch(simulator, "openalex", 1).outcome is Outcome.OK
    broken = fetch(simulator, "openalex", 2)
    assert broken.outcome is Outcome.ERROR
    assert "body is not JSON" in broken.detail


def test_pubmed_summaries_carry_authors_year_and_journal(simulator: Simulator) -> None:
    spec = CONFIG.engine("pubmed")
    search = fetch(simulator, "pubmed", 1)
    assert search.follow_up is not None
    url = route_to_simulator(search.follow_up.url, "pubmed", simulator.url)
    with urllib.request.urlopen(url, timeout=10) as response:
        summaries = parse_page(spec, response.read(), 1)

    assert summaries.outcome is Outcome.OK
    first = summaries.results[0]
    assert first.authors and first.year and first.venue == "Journal of Simulated Results"
    assert first.source_id == first.pmid
