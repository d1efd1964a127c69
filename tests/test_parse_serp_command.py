"""`scrapy parse-serp ENGINE FILE` run as a user runs it, from the project folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, realworld_dir


def parse_serp(*args: str, name: str = "parse-serp") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LYRA_CONFIG_DIR"}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", name, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("name", ["parse-serp", "parse_serp"])
def test_prints_one_json_line_per_result(name: str) -> None:
    page = realworld_dir() / "serp/duckduckgo/lofi-ddg-html-foo-2025-04.html"

    result = parse_serp("duckduckgo", str(page), name=name)

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["rank"] for line in lines] == list(range(1, 11))
    assert lines[0]["url"] == "https://en.wikipedia.org/wiki/Foo_Fighters"
    assert all(line["title"] and "snippet" in line for line in lines)


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
def test_a_block_page_prints_one_line_and_exits_3(engine: str, rel: str, kind: str) -> None:
    result = parse_serp(engine, str(realworld_dir() / rel))

    assert result.returncode == 3
    assert result.stdout == f"blocked: {kind}\n"


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
