"""The page number a saved page states about itself (lyra_crawl.engines.stated_page): from real
pages and the simulator's, and never a wrong number where the page says nothing clear."""

from __future__ import annotations

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines import html
from lyra_crawl.engines.stated_page import StatedPage, stated_page
from lyra_crawl.simulator.corpus import CorpusShape, page_results
from lyra_crawl.simulator.engines import build_engines
from tests.conftest import realworld_dir
from tests.realworld_fields import ROOTS, engine_of, manifest

CONFIG = load_config()
SIMULATED = build_engines(google_js=False)
HTML_ENGINES = sorted(name for name, spec in CONFIG.engines.items() if spec.family == "html")


def selector(body: bytes):
    return html.page_selector(body)


def stated(engine: str, body: bytes, url: str = "") -> StatedPage | None:
    return stated_page(CONFIG.engine(engine), selector(body), url)


@pytest.mark.parametrize(
    ("engine", "rel", "expected"),
    [
        (
            "bing",
            "serp/bing/sescraper-bing-test-keyword-page2-2020-01.html",
            StatedPage(2, "the pager marks page 2"),
        ),
        (
            "google",
            "serp/google/sescraper-google-test-keyword-page2-2020-01.html",
            StatedPage(2, "the pager marks page 2"),
        ),
        (
            "google",
            "serp/google/serpparser-nojs-google-2023-06.html",
            StatedPage(1, "its Next link asks for start=10 (page 2)"),
        ),
        (
            "mojeek",
            "serp/mojeek/wsm-mojeek-javascript-tutorial.html",
            StatedPage(1, "its Next link asks for s=11 (page 2)"),
        ),
        (
            "brave",
            "serp/brave/wsm-brave-javascript-tutorial.html",
            StatedPage(1, "its Next link asks for offset=1 (page 2)"),
        ),
        (
            "ecosia",
            "serp/ecosia/wsm-ecosia-javascript-tutorial.html",
            StatedPage(1, "its Next link asks for p=1 (page 2)"),
        ),
        (
            "startpage",
            "serp/startpage/wsm-startpage-javascript-tutorial-http.html",
            StatedPage(1, "its Next form asks for page=2 (page 2)"),
        ),
        # Page 1 of 2020 held 30 results, so its Next form's offset is 30: an offset in a form
        # counts results shown, not pages, and is not read as a page.
        (
            "duckduckgo",
            "serp/duckduckgo/sep-vcr-ddg-html-fake-cache-bypass-2020-07.body2.html",
            None,
        ),
    ],
)
def test_real_pages_state_their_number(engine, rel, expected) -> None:
    assert stated(engine, (realworld_dir() / rel).read_bytes()) == expected


def _real_result_pages() -> list:
    cases = []
    for root in ROOTS:
        for rel, entry in sorted(manifest(root).items()):
            engine = engine_of(rel, entry)
            spec = CONFIG.engines.get(engine)
            if spec is not None and spec.family == "html" and not entry.get("blocked"):
                cases.append(pytest.param(root, rel, engine, entry.get("page", 1), id=rel))
    return cases


def test_no_real_page_is_given_a_wrong_number() -> None:
    cases = _real_result_pages()
    found = {}
    for case in cases:
        root, rel, engine, page = case.values
        found[rel] = (page, stated(engine, (ROOTS[root] / rel).read_bytes()))

    wrong = {rel: both for rel, both in found.items() if both[1] and both[1].number != both[0]}
    assert wrong == {}
    stated_pages = [rel for rel, (_, said) in found.items() if said is not None]
    assert len(stated_pages) >= len(found) // 2, found  # most real pages say their number


@pytest.mark.parametrize("engine", HTML_ENGINES)
def test_a_simulated_page_states_its_own_number_or_nothing(engine) -> None:
    sim = SIMULATED[engine]
    found = {}
    for number in (1, 2, 3):
        results = page_results("tide pools", number, sim.per_page, CorpusShape())
        found[number] = stated(
            engine, sim.results_page("tide pools", number, results).body.encode()
        )

    assert all(page is None or page.number == number for number, page in found.items()), found
    if engine in ("bing", "google", "marginalia"):  # their pages show the number
        assert [page.number for page in found.values() if page] == [1, 2, 3]


def test_the_url_a_page_came_from_states_its_number() -> None:
    body = b"<html><body><p>saved</p></body></html>"
    url = "https://www.mojeek.com/search?q=tide&s=21"

    assert stated("mojeek", body, url) == StatedPage(3, "its URL asks for s=21")
    assert stated("mojeek", body, "https://www.mojeek.com/search?q=tide") == StatedPage(
        1, "its URL has no s, as page 1 has not"
    )
    assert stated("mojeek", body, "https://www.mojeek.com/about?s=21") is None
    assert stated("mojeek", body, "https://www.mojeek.com/search?q=tide&s=15") is None


def test_a_canonical_link_states_the_number() -> None:
    body = b'<html><head><link rel="canonical" href="/search?q=t&first=21"></head></html>'

    assert stated("bing", body) == StatedPage(3, "its canonical link asks for first=21")


def test_next_controls_that_disagree_state_nothing() -> None:
    body = (
        b'<html><body><a rel="next" href="/search?q=t&s=11">2</a>'
        b'<a class="next" href="/search?q=t&s=31">4</a></body></html>'
    )

    assert stated("mojeek", body) is None
