"""`scrapy parse-serp ENGINE FILE` run as a user runs it, from the project folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lyra_crawl.simulator.corpus import CorpusShape, page_results
from lyra_crawl.simulator.engines import build_engines
from tests.conftest import ROOT, realworld_dir

# Every test runs the command in a process of its own.
pytestmark = pytest.mark.subprocess


def parse_serp(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LYRA_CONFIG_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "parse-serp", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_prints_one_json_line_per_result() -> None:
    page = realworld_dir() / "serp/duckduckgo/lofi-ddg-html-foo-2025-04.html"

    result = parse_serp("duckduckgo", str(page))

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["rank"] for line in lines] == list(range(1, 11))
    assert result.stderr.splitlines()[-1] == "ok: 10 results"
    assert lines[0]["url"] == "https://en.wikipedia.org/wiki/Foo_Fighters"
    assert all(line["title"] and "snippet" in line for line in lines)


def test_scrapy_lists_each_command_once_by_its_documented_name() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "scrapy", "-h"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    names = [line.split()[0] for line in listing.splitlines() if line.startswith("  ")]

    assert len(names) == len(set(names)), names
    assert {"parse-serp", "check-engines", "export-graph"} <= set(names)
    assert not {"parse_serp", "check_engines", "export_graph"} & set(names)


def test_prints_the_ids_an_engine_gives() -> None:
    page = realworld_dir() / "serp/arxiv/arxivpy-q-testing-start0-max10-2026-04.atom.xml"

    first = json.loads(parse_serp("arxiv", str(page)).stdout.splitlines()[0])

    assert (first["arxiv_id"], first["doi"]) == ("2202.12139", "10.1109/icstw55395.2022.00035")


@pytest.mark.parametrize(
    ("engine", "rel", "kind"),
    [
        ("bing", "serp/bing/wsm-bing-captcha-one-last-step-2026-04.html", "captcha"),
        ("google", "serp/google/serpparser-recaptcha-sorry-2020-10.html", "captcha"),
        (
            "qwant",
            "serp/qwant/wsm-qwant-web-geoblock-not-available-in-country-2026-04.html",
            "geo_block",
        ),
    ],
)
def test_a_block_page_prints_its_kind_and_marker_and_exits_3(
    engine: str, rel: str, kind: str
) -> None:
    result = parse_serp(engine, str(realworld_dir() / rel))

    assert result.returncode == 3
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1].startswith(f"blocked: {kind} (page ")


def test_an_error_page_exits_1_with_the_engines_message() -> None:
    page = realworld_dir() / "serp/arxiv/arxivpy-id-abc-error-http400-2026-04.atom.xml"

    result = parse_serp("arxiv", str(page), "--status", "400")

    assert result.returncode == 1
    assert result.stdout == "" and "incorrect id format" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [(["nosuch", "x.html"], "engine 'nosuch' is unknown"), (["bing", "missing.html"], "missing")],
)
def test_bad_input_exits_2(args: list[str], message: str) -> None:
    result = parse_serp(*args)

    assert result.returncode == 2
    assert result.stderr.startswith("error:") and message in result.stderr


def test_reads_the_page_number_the_page_states_and_says_how() -> None:
    page = realworld_dir() / "serp/bing/sescraper-bing-test-keyword-page2-2020-01.html"

    result = parse_serp("bing", str(page))

    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["page 2: the pager marks page 2", "ok: 10 results"]
    assert len(result.stdout.splitlines()) == 10


def test_a_page_number_given_against_the_page_is_used_and_the_disagreement_said() -> None:
    page = realworld_dir() / "serp/bing/sescraper-bing-test-keyword-page2-2020-01.html"

    result = parse_serp("bing", str(page), "--page", "3")

    assert result.returncode == 3  # the engine answered another page than asked: soft block
    assert result.stderr.splitlines()[0] == (
        "page 3: as --page says, though the pager marks page 2 (page 2)"
    )
    assert "blocked: soft_block (asked for page 3, the engine answered with page 2)" in (
        result.stderr
    )


def test_a_page_that_states_no_number_is_page_1_and_says_so(tmp_path) -> None:
    page = sim_page(tmp_path, "mojeek", lambda e, q, r: e.results_page(q, 2, r))

    result = parse_serp("mojeek", str(page))

    assert result.stderr.splitlines()[0] == (
        "page 1: the page does not state its number (give --page N if it is not 1)"
    )
    stated = parse_serp("mojeek", str(page), "--url", "https://www.mojeek.com/search?q=x&s=11")
    assert stated.stderr.splitlines()[0] == "page 2: its URL asks for s=11"


def test_the_engines_no_results_page_is_empty_with_its_marker(tmp_path) -> None:
    page = sim_page(tmp_path, "mojeek", lambda e, q, r: e.results_page(q, 1, []))

    result = parse_serp("mojeek", str(page), "--page", "1")

    assert result.returncode == 0 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "empty: the engine's no-results page (page contains 'No pages found matching')"
    )


def test_a_page_in_a_changed_layout_exits_4_with_the_evidence(tmp_path) -> None:
    page = sim_page(tmp_path, "bing", lambda e, q, r: e.changed_layout_page(q, 1, r))

    result = parse_serp("bing", str(page))

    assert result.returncode == 4 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        "layout_changed: no result container of any layout (current) is on the page; not the "
        "engine's no-results page; 10 outbound links"
    )


def sim_page(tmp_path, engine: str, make) -> str:
    """A page of the simulated `engine` (`make(engine, query, results)`) saved to a file."""
    sim = build_engines(google_js=False)[engine]
    results = page_results("tide pools", 1, sim.per_page, CorpusShape())
    path = tmp_path / f"{engine}.html"
    path.write_text(make(sim, "tide pools", results).body, encoding="utf-8")
    return str(path)
