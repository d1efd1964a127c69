"""A page the rules no longer read is `layout_changed`, never `empty`; a known empty page is empty.

Mutations of real result pages (their result containers renamed, or removed) must come out as
layout_changed with the evidence in the detail; each engine's own no-results page as empty;
block pages as their block whatever status they came with.
"""

from __future__ import annotations

import pytest
import yaml
from lxml import etree, html

from lyra_crawl.config import PARSERS_FILE, POLICY_FILE, load_config, parse_config, read_bundled
from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.simulator.engines import build_engines
from tests.realworld_fields import ROOTS, engine_of, manifest

CONFIG = load_config()
HTML_ENGINES = sorted(name for name, spec in CONFIG.engines.items() if spec.family == "html")
SIMULATED = build_engines(google_js=False)


def _result_pages() -> list:
    cases = []
    for root in ROOTS:
        for rel, entry in sorted(manifest(root).items()):
            engine = engine_of(rel, entry)
            spec = CONFIG.engines.get(engine)
            if spec and spec.family == "html" and entry.get("organic") and not entry["blocked"]:
                cases.append(pytest.param(root, rel, engine, entry.get("page", 1), id=rel))
    return cases


def _mutated(body: bytes, engine: str, mutate) -> bytes:
    """`body` with every result container any layout of `engine` finds passed to `mutate`."""
    tree = html.fromstring(body)
    xpaths = [xpath for layout in CONFIG.engine(engine).parse for xpath in layout.results]
    for _ in range(20):  # a container inside a container shows up once the outer one is gone
        found = [node for xpath in xpaths for node in tree.xpath(xpath)]
        if not found:
            return etree.tostring(tree, encoding="utf-8")
        for node in found:
            if node.getparent() is not None:
                mutate(node)
    raise AssertionError("result containers keep appearing")


def _rename(node: etree._Element) -> None:
    node.tag = "section"
    node.attrib.clear()


def _remove(node: etree._Element) -> None:
    node.getparent().remove(node)


@pytest.mark.parametrize("mutate", [_rename, _remove], ids=["renamed", "removed"])
@pytest.mark.parametrize(("root", "rel", "engine", "page"), _result_pages())
def test_real_results_page_without_its_containers_is_layout_changed(
    root, rel, engine, page, mutate
) -> None:
    body = (ROOTS[root] / rel).read_bytes()

    result = parse_page(CONFIG.engine(engine), _mutated(body, engine, mutate), page)

    assert result.outcome is Outcome.LAYOUT_CHANGED, result.detail
    assert not result.blocked and not result.results
    assert "not the engine's no-results page" in result.detail
    assert "outbound links" in result.detail


@pytest.mark.parametrize("engine", HTML_ENGINES)
def test_the_engines_own_no_results_page_is_empty(engine) -> None:
    page = SIMULATED[engine].results_page("zzqx nothing", 1, [])

    result = parse_page(CONFIG.engine(engine), page.body.encode(), 1)

    assert result.outcome is Outcome.EMPTY, result.detail
    assert "no-results page" in result.detail


@pytest.mark.parametrize("engine", HTML_ENGINES)
def test_a_results_page_stripped_of_everything_is_layout_changed(engine) -> None:
    body = b"<html><body><p>Welcome</p><a href='https://elsewhere.example/'>x</a></body></html>"

    result = parse_page(CONFIG.engine(engine), body, 1)

    assert result.outcome is Outcome.LAYOUT_CHANGED
    assert "no result container of any layout" in result.detail
    assert "1 outbound links" in result.detail


def _block_pages() -> list:
    """Block pages with a body that says so: the simulator's, for each engine whose rules read
    block pages by their body (the others name only a status or a redirect)."""
    cases = []
    for engine in HTML_ENGINES:
        if not any(rule.body_contains or rule.xpath for rule in CONFIG.engine(engine).blocks):
            continue
        sim = SIMULATED[engine]
        page = sim.captcha_page("q")
        location = dict(page.headers).get("Location")
        if location:  # a redirect: the block page is where it leads
            path, _, query = location.partition("?")
            params = dict(pair.split("=", 1) for pair in query.split("&") if "=" in pair)
            page = sim.other_page(path, params)
        if page is not None and page.status != 503:
            cases.append(pytest.param(engine, page.body.encode(), id=engine))
    return cases


@pytest.mark.parametrize(("engine", "body"), _block_pages())
@pytest.mark.parametrize("status", [200, 403])
def test_a_block_page_is_the_block_whatever_its_status(engine, body, status) -> None:
    result = parse_page(CONFIG.engine(engine), body, 1, status=status)

    assert result.blocked, (result.outcome, result.detail)
    assert "page contains" in result.detail or "page matches" in result.detail


def test_an_empty_body_is_an_error_not_an_empty_page() -> None:
    result = parse_page(CONFIG.engine("bing"), b"  ", 1)

    assert result.outcome is Outcome.ERROR and result.detail == "empty body"


def test_a_layout_list_reads_an_older_layout_when_the_current_one_finds_nothing() -> None:
    parsers = yaml.safe_load(read_bundled(PARSERS_FILE))
    mojeek = parsers["engines"]["mojeek"]
    older = {"layout": "older", "results": "//div[@class='hit']", "url": "a/@href", "title": "a"}
    mojeek["parse"] = [{"layout": "current", **mojeek["parse"]}, older]
    spec = parse_config(yaml.safe_dump(parsers), read_bundled(POLICY_FILE)).engine("mojeek")
    body = b"<div class='hit'><a href='https://a.example/'>A</a></div>"

    result = parse_page(spec, body, 1)

    assert result.outcome is Outcome.OK
    assert [(r.url, r.title) for r in result.results] == [("https://a.example/", "A")]
