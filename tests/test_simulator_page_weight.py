"""The simulator's heavy pages (`--page-kb`): as large as real results pages, and read by every
rule exactly as the light ones."""

from __future__ import annotations

import urllib.request

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.simulator.corpus import CorpusShape, page_results
from lyra_crawl.simulator.engines import build_engines
from lyra_crawl.simulator.page_weight import with_chrome

CONFIG = load_config()
HTML_ENGINES = sorted(name for name, spec in CONFIG.engines.items() if spec.family == "html")


def _read(engine: str, body: str, page: int) -> tuple[Outcome, list[tuple[str, str, str]]]:
    parsed = parse_page(CONFIG.engine(engine), body.encode(), page)
    return parsed.outcome, [(r.url, r.title, r.snippet) for r in parsed.results]


@pytest.mark.parametrize("engine", HTML_ENGINES)
def test_a_heavy_page_reads_exactly_as_the_light_one(engine) -> None:
    sim = build_engines(google_js=False)[engine]
    results = page_results("tide pools", 2, sim.per_page, CorpusShape())
    light = sim.results_page("tide pools", 2, results).body
    empty = sim.results_page("tide pools", 2, []).body

    heavy = with_chrome(light, 300)

    assert len(heavy.encode()) >= 300 * 1024
    assert _read(engine, heavy, 2) == _read(engine, light, 2)
    assert _read(engine, light, 2)[0] is Outcome.OK
    assert _read(engine, with_chrome(empty, 300), 2) == (Outcome.EMPTY, [])


def test_the_simulator_serves_heavy_results_pages_over_http(start_simulator) -> None:
    plain, heavy = start_simulator(), start_simulator("--page-kb", "200")

    def fetch(url: str) -> bytes:
        with urllib.request.urlopen(f"{url}/mojeek/search?q=tide+pools&s=11") as answer:
            return answer.read()

    light_body, heavy_body = fetch(plain.url), fetch(heavy.url)

    assert len(heavy_body) >= 200 * 1024 > 20 * len(light_body)
    spec = CONFIG.engine("mojeek")
    assert parse_page(spec, heavy_body, 2).results == parse_page(spec, light_body, 2).results
