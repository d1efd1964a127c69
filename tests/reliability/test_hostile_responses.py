"""Hostile responses: every parser answers any body with an outcome, never a crash.

Bodies come from three places: hand-made junk (empty, nested, invalid UTF-8, the wrong format),
the simulator's own pages for each engine rendered with hostile results (script URLs, 100 KB
titles), and the real captured pages of ../shared/realworld mutated by hypothesis. Bad results
are dropped with a counted reason; a crawl meeting a broken page keeps the pages before it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
import pytest_twisted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome, ParseResult
from lyra_crawl.engines.parsing import MAX_TITLE_CHARS, MAX_URL_CHARS, parse_page
from lyra_crawl.engines.urls import is_web_url
from lyra_crawl.simulator.corpus import make_result
from lyra_crawl.simulator.engines import build_engines
from tests.conftest import REALWORLD_DIR, query_db, run_crawl

CONFIG = load_config()
ENGINES = sorted(CONFIG.engines)
SIM_ENGINES = build_engines(google_js=False)

JUNK_BODIES = {
    "empty": b"",
    "whitespace": b" \n\t ",
    "nul_bytes": b"\x00" * 64,
    "invalid_utf8": b"\xff\xfe\xc3\x28<html><body>\x80\x81<a href='\xff'>\xfe</a></body></html>",
    "html_for_json": b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
    "json_null": b"null",
    "json_list": b'[{"url": "https://example.org/", "title": "x"}]',
    "json_number": b"3",
    "json_wrong_types": json.dumps(
        {
            "status": "success",
            "data": {"result": {"items": {"mainline": [{"type": "web", "items": [1, [2]]}]}}},
            "results": "not a list",
            "items": {"a": 1},
            "message": {"items": 7, "query": 3},
            "query": {"search": 3, "pages": [None, 5]},
            "search": [{"url": 5, "label": ["x"]}],
            "result": {"uids": [1, None, "7"], "7": {"title": 9}},
            "meta": {"page": "²"},
            "offset": "x",
        }
    ).encode(),
    "xml_unclosed": b'<?xml version="1.0"?><feed><entry><id>',
    "xml_entity_bomb": b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa">'
    b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><feed>&b;</feed>',
    # 5 MB of nested tags: deeper than libxml2 nests, wider than any page.
    "nested_5mb": b"<html><body>" + b"<div><span>" * 450_000 + b"</body></html>",
    "huge_page_number": b"<html><body><nav>page " + b"9" * 5_000 + b"</nav></body></html>",
}

HOSTILE_URLS = {
    "javascript": "javascript:alert(document.cookie)",
    "data": "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "relative": "/relative/path?x=1",
    "broken_ipv6": "http://[::1/unclosed",
    "too_long": "https://example.org/" + "a" * MAX_URL_CHARS,
}


def check_result(result: ParseResult) -> None:
    """What every parse, of any body, must give: a known outcome and only storable results."""
    assert isinstance(result.outcome, Outcome)
    assert (result.outcome is Outcome.OK) == bool(result.results), result
    for found in result.results:
        assert is_web_url(found.url) and len(found.url) <= MAX_URL_CHARS, found.url[:200]
        assert isinstance(found.title, str) and len(found.title) <= MAX_TITLE_CHARS
        assert found.title.strip() or result.follow_up is not None, found
    assert all(isinstance(count, int) and count > 0 for count in result.dropped.values())


@pytest.mark.parametrize("body", JUNK_BODIES.values(), ids=JUNK_BODIES.keys())
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("status", [200, 500])
def test_every_parser_answers_junk_with_an_outcome(engine: str, body: bytes, status: int) -> None:
    spec = CONFIG.engine(engine)
    result = parse_page(spec, body, 1, status=status, url=engine_url(engine))

    check_result(result)
    if body.strip() in (b"", b"\x00" * 64) or status >= 400:
        assert not result.results


PLACEHOLDER_URL = "https://placeholder.example/result"


def simulated_page(engine: str, url: str | None = None, title: str | None = None) -> bytes:
    """The simulator's page 1 of `engine`, its second result given `url` and/or `title`."""
    results = [make_result("hostile fields", index, on_topic=True) for index in range(3)]
    results[1] = replace(results[1], url=PLACEHOLDER_URL, title=title or results[1].title)
    body = SIM_ENGINES[engine].results_page("hostile fields", 1, results).body
    # Put in after rendering: the simulator itself reads the hosts of the URLs it shows.
    url = url or PLACEHOLDER_URL
    body = body.replace(quote(PLACEHOLDER_URL, safe=""), quote(url, safe=""))
    return body.replace(PLACEHOLDER_URL, url).encode("utf-8")


def engine_url(engine: str) -> str:
    """The engine's own URL, as the spider hands it to parsers (Wikipedia's in English)."""
    return CONFIG.engine(engine).url.replace("{language}", "en")


@pytest.mark.parametrize("hostile", HOSTILE_URLS.values(), ids=HOSTILE_URLS.keys())
@pytest.mark.parametrize("engine", ENGINES)
def test_a_result_with_a_hostile_url_is_dropped_and_counted(engine: str, hostile: str) -> None:
    spec = CONFIG.engine(engine)
    body = simulated_page(engine, url=hostile)
    result = parse_page(spec, body, 1, url=engine_url(engine))

    check_result(result)
    assert hostile not in {found.url for found in result.results}
    if spec.family == "html" and hostile.startswith("/"):
        # A relative link is resolved as a browser would: on the engine's own host.
        resolved = [found.url for found in result.results if hostile in found.url]
        assert all(urlsplit(url).hostname == spec.host for url in resolved)
    elif hostile in body.decode("utf-8") and result.follow_up is None:
        # The engine's format carries result URLs (arXiv, PubMed, Wikipedia build their own).
        assert sum(result.dropped.values()) >= 1, result.dropped
        assert len(result.results) == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_100_kb_title_is_dropped_and_counted(engine: str) -> None:
    spec = CONFIG.engine(engine)
    title = "Endless " * 12_800
    body = simulated_page(engine, title=title)
    result = parse_page(spec, body, 1, url=engine_url(engine))

    check_result(result)
    assert not any(found.title.startswith("Endless") for found in result.results)
    if "Endless Endless" in body.decode("utf-8") and result.follow_up is None:
        assert result.dropped.get("title_too_long") == 1, result.dropped


def realworld_files() -> list[Path]:
    if not REALWORLD_DIR.is_dir():
        return []
    return sorted(
        path
        for path in REALWORLD_DIR.rglob("*")
        if path.is_file() and path.suffix in (".html", ".json", ".xml")
    )


REALWORLD_FILES = realworld_files()


@st.composite
def mutated_pages(draw: st.DrawFn) -> bytes:
    """A real captured page, cut, spliced, sprinkled with junk bytes, or swapped with another."""
    body = REALWORLD_FILES[draw(st.integers(0, len(REALWORLD_FILES) - 1))].read_bytes()
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(body)))
        action = draw(st.sampled_from(["cut", "insert", "delete", "splice", "swap_urls"]))
        if action == "cut":
            body = body[:at]
        elif action == "insert":
            body = body[:at] + draw(st.binary(min_size=1, max_size=64)) + body[at:]
        elif action == "delete":
            body = body[:at] + body[at + draw(st.integers(1, 4096)) :]
        elif action == "splice":
            other = REALWORLD_FILES[draw(st.integers(0, len(REALWORLD_FILES) - 1))].read_bytes()
            body = body[:at] + other[draw(st.integers(0, len(other))) :]
        else:
            hostile = draw(st.sampled_from(sorted(HOSTILE_URLS.values()))).encode()
            body = body.replace(b"https://", hostile[: draw(st.integers(1, 40))], 5)
    return body


@pytest.mark.skipif(not REALWORLD_FILES, reason=f"realworld pages not found at {REALWORLD_DIR}")
@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(body=mutated_pages(), engine=st.sampled_from(ENGINES), page=st.integers(1, 12))
def test_mutated_real_pages_never_crash_any_parser(body: bytes, engine: str, page: int) -> None:
    spec = CONFIG.engine(engine)
    check_result(parse_page(spec, body, page, url=engine_url(engine)))


@pytest.mark.e2e
@pytest.mark.parametrize("engine", ["mojeek", "openalex", "qwant"])
@pytest_twisted.ensureDeferred
async def test_a_broken_page_mid_crawl_keeps_the_pages_before_it(start_simulator, db_path, engine):
    simulator = start_simulator("--malformed-at", f"{engine}:3")
    crawler = await run_crawl(
        simulator,
        db_path,
        query="hostile pages",
        engine=engine,
        sources="serp",
        expect_errors=engine != "mojeek",  # a broken JSON page is an error page
    )

    pages = query_db(db_path, "SELECT page_number, outcome, items_stored FROM serp_pages")
    assert [(row[0], row[1]) for row in pages][:2] == [(1, "ok"), (2, "ok")]
    assert all(row[2] > 0 for row in pages[:2])
    if CONFIG.engine(engine).family == "json":
        # Half a JSON document is no document: the page is an error and paging stops there.
        assert [(row[0], row[1], row[2]) for row in pages][2:] == [(3, "error", 0)]
    else:
        # Half an HTML page still holds whole results, which are kept; paging goes on.
        assert 0 < pages[2][2] < pages[1][2] and len(pages) > 3
    (query,) = query_db(db_path, "SELECT status, items FROM queries")
    assert query["status"] == "finished"
    assert query["items"] == sum(row[2] for row in pages)
    assert crawler.stats.get_value("finish_reason") == "finished"
