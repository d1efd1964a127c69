"""Reading an HTML page from its results region, and results before block text.

An engine's `results_within` element is only a faster way to the same answer: every real page
reads the same from it as whole, and a page whose element holds no results is read whole. And
a results page that quotes a block page's words (a snippet about CAPTCHAs) stays a results page.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.html import results_region
from lyra_crawl.engines.parsing import parse_page
from tests.realworld_fields import ROOTS, engine_of, manifest

CONFIG = load_config()


def _real_result_pages(engines: set[str]) -> list:
    cases = []
    for root in ROOTS:
        for rel, entry in sorted(manifest(root).items()):
            engine = engine_of(rel, entry)
            if engine in engines and entry.get("organic") and not entry["blocked"]:
                cases.append(pytest.param(root, rel, engine, entry.get("page", 1), id=rel))
    return cases


REGION_ENGINES = {name for name, spec in CONFIG.engines.items() if spec.results_within}
MARKED_ENGINES = {
    name
    for name, spec in CONFIG.engines.items()
    if spec.family == "html" and any(rule.body_contains for rule in spec.blocks)
}


def _whole(engine: str):
    return dataclasses.replace(CONFIG.engine(engine), results_within=None)


def test_engines_with_large_pages_name_their_results_region() -> None:
    assert {"ecosia", "startpage"} <= REGION_ENGINES


@pytest.mark.parametrize(("root", "rel", "engine", "page"), _real_result_pages(REGION_ENGINES))
def test_a_real_page_reads_the_same_from_its_region_as_whole(root, rel, engine, page) -> None:
    body = (ROOTS[root] / rel).read_bytes()
    region = results_region(CONFIG.engine(engine), body)

    assert region is not None and len(region) < len(body) * 0.7
    from_region = parse_page(CONFIG.engine(engine), body, page)
    assert from_region.outcome is Outcome.OK and from_region.results
    assert from_region == parse_page(_whole(engine), body, page)


@pytest.mark.parametrize(("root", "rel", "engine", "page"), _real_result_pages(REGION_ENGINES))
def test_a_region_without_results_leaves_the_page_read_whole(root, rel, engine, page) -> None:
    body = (ROOTS[root] / rel).read_bytes()
    name = CONFIG.engine(engine).results_within.encode()
    # The real element renamed, and an empty one of its name put first in the body.
    moved = re.sub(rb"<(/?)" + name + rb"\b", rb"<\1div", body)
    moved = re.sub(rb"(<body\b[^>]*>)", rb"\1<" + name + rb"></" + name + rb">", moved, count=1)
    assert results_region(CONFIG.engine(engine), moved) == b"<" + name + b">"

    assert parse_page(CONFIG.engine(engine), moved, page) == parse_page(_whole(engine), body, page)


def test_the_region_starts_at_the_whole_element_name() -> None:
    spec = CONFIG.engine(sorted(REGION_ENGINES)[0])
    name = spec.results_within
    body = f"<div><{name}line>x</{name}line><{name}\nid=m><p>r</p></{name}><{name}s/>".encode()

    assert results_region(spec, body) == f"<{name}\nid=m><p>r</p>".encode()
    assert results_region(spec, f"<div><{name}line>x</{name}line></div>".encode()) is None


@pytest.mark.parametrize(("root", "rel", "engine", "page"), _real_result_pages(MARKED_ENGINES))
def test_a_results_page_quoting_block_text_is_still_results(root, rel, engine, page) -> None:
    body = (ROOTS[root] / rel).read_bytes()
    spec = CONFIG.engine(engine)
    markers = [marker for rule in spec.blocks for marker in rule.body_contains]
    quoted = "".join(f"<p>{marker}</p>" for marker in markers).encode()
    # At the top of the body (a saved fragment has no <body>: at its very start).
    with_quotes = re.sub(rb"(<body\b[^>]*>)", rb"\1" + quoted, body, count=1)
    if with_quotes == body:
        with_quotes = quoted + body

    result = parse_page(spec, with_quotes, page)

    assert result.outcome is Outcome.OK, result.detail
    assert result.results == parse_page(spec, body, page).results


REDIRECTED_ENGINES = {
    name
    for name, spec in CONFIG.engines.items()
    if spec.family == "html" and any(rule.url_contains for rule in spec.blocks)
}


@pytest.mark.parametrize(("root", "rel", "engine", "page"), _real_result_pages(REDIRECTED_ENGINES))
def test_a_results_page_reached_by_a_block_redirect_is_the_block(root, rel, engine, page) -> None:
    body = (ROOTS[root] / rel).read_bytes()
    spec = CONFIG.engine(engine)
    rule = next(rule for rule in spec.blocks if rule.url_contains)
    url = f"https://{spec.host}{rule.url_contains[0]}?from=search"

    result = parse_page(spec, body, page, url=url)

    assert result.outcome is rule.kind and not result.results
    assert result.detail == f"redirected to {url}"
