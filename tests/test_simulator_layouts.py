"""The simulator's changed layout (`--layout-changed-at`): the results stay on the page, no rule
of the bundled config reads them any more."""

from __future__ import annotations

import json
import re
from html import escape

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.simulator.__main__ import build_parser
from lyra_crawl.simulator.corpus import CorpusShape, page_results
from lyra_crawl.simulator.engines import build_engines

CONFIG = load_config()
HTML_ENGINES = sorted(name for name, spec in CONFIG.engines.items() if spec.family == "html")
INSERTED = re.compile(r"innerHTML = (\".*\");</script>")


@pytest.mark.parametrize("engine", HTML_ENGINES)
def test_a_changed_layout_keeps_the_results_where_no_rule_finds_them(engine) -> None:
    sim = build_engines(google_js=False)[engine]
    results = page_results("tide pools", 2, sim.per_page, CorpusShape())
    spec = CONFIG.engine(engine)

    usual = parse_page(spec, sim.results_page("tide pools", 2, results).body.encode(), 2)
    changed = sim.changed_layout_page("tide pools", 2, results).body
    parsed = parse_page(spec, changed.encode(), 2)

    assert usual.outcome is Outcome.OK and len(usual.results) == len(results)
    assert parsed.outcome is Outcome.LAYOUT_CHANGED, parsed.detail
    assert "no result container of any layout" in parsed.detail
    assert all(escape(result.title) in changed for result in results)


def test_google_changes_its_layout_before_its_script_inserts_the_results() -> None:
    google = build_engines(google_js=True)["google"]
    results = page_results("tide pools", 1, google.per_page, CorpusShape())

    usual = INSERTED.search(google.results_page("tide pools", 1, results).body)
    changed = INSERTED.search(google.changed_layout_page("tide pools", 1, results).body)

    spec = CONFIG.engine("google")
    inserted = [json.loads(match[1]).encode() for match in (usual, changed)]
    assert parse_page(spec, inserted[0], 1).outcome is Outcome.OK
    assert parse_page(spec, inserted[1], 1).outcome is Outcome.LAYOUT_CHANGED


def test_an_api_has_no_layout_to_change(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--layout-changed-at", "openalex:1"])

    assert "openalex answers in JSON or XML, which has no layout to change" in (
        capsys.readouterr().err
    )
