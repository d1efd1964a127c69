"""The bare spiders the benchmarks measure lyra against do the work their docstrings say: a
baseline whose callback fails does less than a plain spider would and flatters every ratio."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

from benchmarks.bench_batch import _run_bare
from benchmarks.crawl_runner import run_crawls
from lyra_crawl.config import load_config
from lyra_crawl.engines.request import build_page_request
from lyra_crawl.engines.routing import route_to_simulator
from tests.conftest import ROOT

CONFIG_DIR = ROOT / "config"


def logged_request(simulator_url: str, engine: str, query: str, page: int) -> dict:
    """A request as the simulator's log records it, built as lyra builds it."""
    built = build_page_request(load_config(CONFIG_DIR).engine(engine), query, page)
    parts = urlsplit(route_to_simulator(built.url, engine, simulator_url))
    return {
        "engine": engine,
        "method": "GET",
        "path": parts.path.removeprefix(f"/{engine}"),
        "params": dict(parse_qsl(parts.query)),
    }


def test_the_replay_spider_reads_each_html_results_page_and_decodes_json(simulator, tmp_path):
    plan = [
        logged_request(simulator.url, engine, "kelp", page)
        for engine in ("mojeek", "wikipedia")
        for page in (1, 2)
    ]

    measured = _run_bare(plan, simulator.url, CONFIG_DIR, tmp_path / "bare.json")

    assert measured["responses"] == 4
    # Mojeek's two pages of 10 results; the JSON answers are decoded, not read for results.
    assert json.loads((tmp_path / "bare.json").read_text())["items"] == 20


def test_the_bare_crawl_spider_reads_every_page_of_its_chains(simulator, tmp_path):
    queries = [("mojeek", "kelp"), ("bing", "kelp")]

    measured = run_crawls("bare", simulator.url, tmp_path / "bare.sqlite3", queries, 3)

    assert measured["pages"] == 6
