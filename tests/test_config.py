"""Config validation: every mistake is one message naming file, engine, field and fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from lyra_crawl.config import ConfigError, load_config, parse_config
from lyra_crawl.paging.stop_rules import SERP_MAX_PAGES_LIMIT

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"
PARSERS = (CONFIG_DIR / "search_parsers.yaml").read_text()
POLICY = (CONFIG_DIR / "engines.yaml").read_text()


def edited(text: str, edit) -> str:
    doc = yaml.safe_load(text)
    edit(doc)
    return yaml.safe_dump(doc)


def test_bundled_config_loads_with_design_values():
    config = load_config()
    assert set(config.engines) >= {
        "duckduckgo",
        "google",
        "bing",
        "mojeek",
        "brave",
        "ecosia",
        "startpage",
        "qwant",
        "marginalia",
        "wikipedia",
        "wikidata",
        "arxiv",
        "pubmed",
    }
    design = {
        "google": (10, 0.05, True),
        "bing": (10, 0.05, True),
        "brave": (50, 0.1, True),
        "mojeek": (None, 0.25, False),
        "duckduckgo": (None, 0.2, False),
    }
    for name, (daily_limit, qps, lastmile) in design.items():
        policy = config.policy(name)
        assert (policy.daily_limit, policy.qps, policy.lastmile) == (daily_limit, qps, lastmile)
    pagination = config.pagination
    assert (pagination.serp_max_pages, pagination.min_novelty_rate) == (10, 0.1)
    assert (pagination.min_harvest_rate, pagination.strategy) == (0.05, "auto")
    citations = config.citations
    assert (citations.depth, citations.top_k, citations.max_per_list) == (0, 10, 1000)


def test_every_serp_engine_has_its_pagination_fields():
    config = load_config()
    for name in ("duckduckgo", "google", "bing", "mojeek", "brave", "ecosia", "startpage"):
        spec = config.engine(name)
        assert spec.pagination_type in ("offset", "page")
        assert spec.results_per_page >= 1 and spec.max_pages >= 1


def test_config_dir_override(tmp_path, monkeypatch):
    (tmp_path / "search_parsers.yaml").write_text(PARSERS)
    (tmp_path / "engines.yaml").write_text(
        edited(POLICY, lambda d: d["engines"]["mojeek"].update(qps=7.0))
    )
    monkeypatch.setenv("LYRA_CONFIG_DIR", str(tmp_path))
    assert load_config().policy("mojeek").qps == 7.0


def test_missing_config_dir_names_the_variable(tmp_path):
    with pytest.raises(ConfigError, match="LYRA_CONFIG_DIR"):
        load_config(tmp_path / "nope")


@pytest.mark.parametrize(
    ("parsers_edit", "policy_edit", "message"),
    [
        (
            lambda d: d["engines"]["bing"].update(results_per_page="ten"),
            None,
            "search_parsers.yaml: engine 'bing': results_per_page must be a whole number "
            "(got 'ten')",
        ),
        (
            lambda d: d["engines"]["mojeek"].update(pagination_type="cursor"),
            None,
            "engine 'mojeek': pagination_type must be one of offset, page (got 'cursor')",
        ),
        (
            lambda d: d["engines"]["mojeek"]["params"].update(s="{ofset}"),
            None,
            "engine 'mojeek': params.s uses unknown placeholder {ofset}: use one of",
        ),
        (
            lambda d: d["engines"]["google"].update(url="https://{query}.example.com/search"),
            None,
            "engine 'google': url may use only {language}, in the host",
        ),
        (
            lambda d: d["engines"]["mojeek"].update(max_pages=0),
            None,
            "engine 'mojeek': max_pages must be >= 1 (got 0)",
        ),
        (
            lambda d: d["engines"]["mojeek"]["blocks"].append({"kind": "angry"}),
            None,
            "engine 'mojeek': blocks[4].kind must be one of",
        ),
        (
            lambda d: d["engines"]["mojeek"]["parse"].pop("title"),
            None,
            "engine 'mojeek': parse.title is missing: add an XPath",
        ),
        (
            lambda d: d["engines"]["google"]["parse"][0].pop("container"),
            None,
            "engine 'google': parse[0].modules are looked for in the results container: add its "
            "XPath as container",
        ),
        (
            lambda d: d["engines"]["ecosia"].update(results_within="<main>"),
            None,
            "engine 'ecosia': results_within must be one HTML element name such as main "
            "(got '<main>')",
        ),
        (
            lambda d: d["engines"]["openalex"].update(results_within="main"),
            None,
            "engine 'openalex': results_within is set, but only html engines are read from an "
            "element: remove it",
        ),
        (
            None,
            lambda d: d["engines"]["bing"].update(qps=-1),
            "engines.yaml: engine 'bing': qps must be > 0 (got -1)",
        ),
        (
            None,
            lambda d: d["engines"].update(altavista={"qps": 1.0}),
            "engines.yaml: engine 'altavista' is not described in search_parsers.yaml",
        ),
        (
            None,
            lambda d: d["engines"]["google"].update(daily_limit="ten"),
            "engine 'google': daily_limit must be a whole number (got 'ten')",
        ),
        (
            None,
            lambda d: d["engines"]["google"].update(enabled="yes"),
            "engine 'google': enabled must be true or false (got 'yes')",
        ),
        (
            None,
            lambda d: d["pagination"].update(serp_max_pages=11),
            "pagination.serp_max_pages must be 1..10 (got 11)",
        ),
        (
            None,
            lambda d: d["citations"].update(depth=3),
            "citations.depth must be 0..2 (got 3)",
        ),
        (
            None,
            lambda d: d["citations"].update(top_k=0),
            "citations.top_k must be >= 1 (got 0)",
        ),
        (
            None,
            lambda d: d["citations"].update(max_per_list="all"),
            "citations.max_per_list must be a whole number (got 'all')",
        ),
    ],
)
def test_each_mistake_gets_one_clear_message(parsers_edit, policy_edit, message):
    parsers = edited(PARSERS, parsers_edit) if parsers_edit else PARSERS
    policy = edited(POLICY, policy_edit) if policy_edit else POLICY
    with pytest.raises(ConfigError) as error:
        parse_config(parsers, policy)
    assert message in str(error.value)


KNOWN_ENGINES = ", ".join(sorted(yaml.safe_load(PARSERS)["engines"]))


@pytest.mark.parametrize(
    ("parsers_edit", "policy_edit", "message"),
    [
        # A wrong type deep inside a list: the whole path, the value, the fix.
        (
            lambda d: d["engines"]["bing"]["blocks"][1].update(status=[429, "often"]),
            None,
            "search_parsers.yaml: engine 'bing': blocks[1].status[1] must be a whole number "
            "(got 'often')",
        ),
        (
            lambda d: d["engines"]["mojeek"]["parse"].update(url=[".//h2/a/@href", None]),
            None,
            "search_parsers.yaml: engine 'mojeek': parse[0].url[1] must be a string (got None)",
        ),
        (
            lambda d: d["engines"]["mojeek"]["blocks"][0].update(body_contains="automated"),
            None,
            "search_parsers.yaml: engine 'mojeek': blocks[0].body_contains must be a list "
            "(got 'automated')",
        ),
        (
            lambda d: d["engines"]["pubmed"]["follow_up"].pop("url"),
            None,
            "search_parsers.yaml: engine 'pubmed': follow_up.url is missing: add it",
        ),
        (
            lambda d: d["engines"].update(bing=5),
            None,
            "search_parsers.yaml: engine 'bing': engine must be a mapping (got int)",
        ),
        (
            None,
            lambda d: d.update(breaker=[3]),
            "engines.yaml: breaker must be a mapping (got list)",
        ),
        # Strict: true is not a number, a number is not a string, 2.5 is not a whole number.
        (
            None,
            lambda d: d["engines"]["bing"].update(qps=True),
            "engines.yaml: engine 'bing': qps must be a number (got True)",
        ),
        (
            lambda d: d["engines"]["bing"].update(max_pages=2.5),
            None,
            "search_parsers.yaml: engine 'bing': max_pages must be a whole number (got 2.5)",
        ),
        (
            lambda d: d["engines"]["bing"].update(pagination_param=5),
            None,
            "search_parsers.yaml: engine 'bing': pagination_param must be a string (got 5)",
        ),
        (
            None,
            lambda d: d["engines"]["bing"].update(allowed_hours="01:00-06:00"),
            "engines.yaml: engine 'bing': allowed_hours must be a list (got '01:00-06:00')",
        ),
        # Names that must be one of a known set are reported with the known ones.
        (
            None,
            lambda d: d["engines"].update(altavista={"qps": 1.0}),
            "engines.yaml: engine 'altavista' is not described in search_parsers.yaml: fix the "
            f"name or add it there (known: {KNOWN_ENGINES})",
        ),
        (
            lambda d: d["engines"]["bing"]["time_range"].update(fortnight="ex1"),
            None,
            "search_parsers.yaml: engine 'bing': time_range.fortnight must be one of day, week, "
            "month, year (got 'fortnight')",
        ),
        # A template or URL that cannot be read is named where it stands, never a traceback.
        (
            lambda d: d["engines"]["mojeek"]["params"].update(s="{offset"),
            None,
            "search_parsers.yaml: engine 'mojeek': params.s is a bad template '{offset' "
            "(expected '}' before end of string): balance the braces",
        ),
        (
            lambda d: d["engines"]["mojeek"].update(url="https://[mojeek.com/search"),
            None,
            "search_parsers.yaml: engine 'mojeek': url must be an absolute http(s) URL "
            "(got 'https://[mojeek.com/search')",
        ),
        (
            None,
            lambda d: d["pagination"].update(serp_max_pages=SERP_MAX_PAGES_LIMIT + 1),
            f"engines.yaml: pagination.serp_max_pages must be 1..{SERP_MAX_PAGES_LIMIT} "
            f"(got {SERP_MAX_PAGES_LIMIT + 1})",
        ),
    ],
)
def test_a_message_names_file_engine_full_path_value_and_fix(parsers_edit, policy_edit, message):
    parsers = edited(PARSERS, parsers_edit) if parsers_edit else PARSERS
    policy = edited(POLICY, policy_edit) if policy_edit else POLICY
    with pytest.raises(ConfigError) as error:
        parse_config(parsers, policy)
    assert str(error.value) == message


def test_keys_the_files_do_not_know_are_left_alone():
    def notes(doc):
        doc["notes"] = "kept by hand"
        doc["engines"]["bing"]["notes"] = ["seen 2026-07"]

    config = parse_config(edited(PARSERS, notes), edited(POLICY, notes))
    assert config.engine("bing") == load_config().engine("bing")


@pytest.mark.parametrize(
    "text",
    [
        "engines: [unclosed",
        "!!python/object/apply:os.system ['echo hacked']",
        "just a string",
    ],
)
def test_bad_yaml_is_a_config_error_never_code(text):
    with pytest.raises(ConfigError, match=r"search_parsers\.yaml"):
        parse_config(text, POLICY)


@pytest.mark.subprocess
def test_an_egg_finds_its_bundled_config_schema_and_report_templates(tmp_path):
    """Scrapyd runs the project from a zipped egg: config, schema and the HTML reports'
    templates must come from inside it."""
    root = Path(__file__).resolve().parent.parent
    build = subprocess.run(
        [
            sys.executable,
            "setup.py",
            "-q",
            "bdist_egg",
            "-d",
            str(tmp_path / "dist"),
            "-b",
            str(tmp_path / "build"),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    shutil.rmtree(root / "lyra_crawl.egg-info", ignore_errors=True)
    (egg,) = (tmp_path / "dist").glob("*.egg")
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import asyncio, lyra_crawl.config as c, lyra_crawl.backends as b;"
        "assert c.__file__.startswith(sys.argv[1]);"
        "print(len(c.load_config().engines));"
        "asyncio.run(b.with_backends({'LYRA_DB_PATH': sys.argv[2]}, lambda _: asyncio.sleep(0)));"
        "import lyra_crawl.reports.html as h;"
        "assert h.__file__.startswith(sys.argv[1]);"
        "assert 'no engine used today' in h.report_html([], [], generated_at='now')"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe, str(egg), str(tmp_path / "egg.sqlite3")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "LYRA_CONFIG_DIR"},
    )
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) >= 13
