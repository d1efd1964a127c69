"""`scrapy check-engines` run as a user runs it, against the simulator: one query, page 1 only,
through the crawl's own politeness chain; one line per engine, each page saved for parse-serp."""

from __future__ import annotations

import re
from pathlib import Path

from lyra_crawl.commands.page_outcome import outcome_text
from lyra_crawl.config import load_config
from lyra_crawl.engines.parsing import parse_page
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.query.arguments import usable_engines
from tests.conftest import query_db, run_scrapy, scrapy_env, with_store

CONFIG = load_config()
LINE = re.compile(r"(?P<engine>\w+) +(?P<outcome>.+?)(?: \(page saved as (?P<path>[^)]+)\))?")
FAULTS = ("--layout-changed-at", "bing:1", "--empty-after", "mojeek:0", "--captcha-at", "brave:1")


def check_engines(simulator, db_path: Path, data: Path, *args: str, **env: str):
    return run_scrapy(
        "check-engines",
        *args,
        env={**scrapy_env(simulator, db_path), "LYRA_DATA_DIR": str(data), **env},
    )


def lines_of(stdout: str) -> dict[str, re.Match[str]]:
    found = [LINE.fullmatch(line) for line in stdout.splitlines()]
    assert all(found), stdout
    return {match["engine"]: match for match in found if match}


def test_each_engine_gets_one_line_with_its_outcome_and_its_saved_page(
    start_simulator, db_path, tmp_path
):
    simulator = start_simulator(*FAULTS)
    engines = ["duckduckgo", "mojeek", "bing", "brave", "startpage", "openalex"]

    result = check_engines(simulator, db_path, tmp_path / "data", *engines, "-q", "tide pools")

    assert result.returncode == 1, result.stderr[-2000:]  # not every engine is ok
    # A changed layout, an empty page and a block are what the check reports, not crawl errors.
    assert " ERROR: " not in result.stderr, result.stderr[-3000:]
    lines = lines_of(result.stdout)
    assert list(lines) == engines
    outcomes = {engine: line["outcome"] for engine, line in lines.items()}
    assert outcomes["duckduckgo"] == outcomes["startpage"] == "ok: 10 results"
    assert outcomes["openalex"] == "ok: 100 results"
    assert outcomes["mojeek"] == (
        "empty: the engine's no-results page (page contains 'No pages found matching')"
    )
    assert outcomes["bing"].startswith(
        "layout_changed: no result container of any layout (current) is on the page; not the "
        "engine's no-results page; "
    )
    assert outcomes["brave"] == "blocked: captcha (page contains 'decided to schedule a captcha')"
    # Each page is saved where the line says, and reads there as the check read it.
    for engine, line in lines.items():
        path = Path(line["path"])
        assert path.parent == tmp_path / "data" / "check" / engine
        found = parse_page(CONFIG.engine(engine), path.read_bytes(), 1)
        assert outcome_text(found.outcome, found.detail, len(found.results)) == outcomes[engine]
    parsed = run_scrapy("parse-serp", "bing", lines["bing"]["path"], env={})
    assert parsed.returncode == 4
    assert parsed.stderr.splitlines()[-1] == outcomes["bing"]
    # Page 1 only, through the politeness chain: quota counted, the block queued and tripped.
    assert [len(simulator.requests(engine)) for engine in engines] == [1, 1, 1, 1, 2, 1]

    async def politeness(backends):
        used = {e: await backends.coordinator.quota_used(e, utc_date()) for e in ("bing", "brave")}
        brave = await backends.coordinator.breaker_health("brave")
        return used, brave.state.value, await backends.store.open_interventions()

    used, brave_breaker, interventions = with_store(db_path, politeness)
    assert used == {"bing": 1, "brave": 1}
    assert brave_breaker == "open"
    assert [(i.engine, i.kind) for i in interventions] == [("brave", "captcha")]
    tasks = query_db(db_path, "SELECT DISTINCT task_id FROM queries")
    assert len(tasks) == 1 and tasks[0]["task_id"].startswith("check-engines-")


def test_an_engine_whose_breaker_is_open_is_not_sent_a_request(start_simulator, db_path, tmp_path):
    simulator = start_simulator("--captcha-at", "mojeek:1")
    check_engines(simulator, db_path, tmp_path / "data", "mojeek")

    again = check_engines(simulator, db_path, tmp_path / "data", "mojeek", "duckduckgo")

    assert again.returncode == 1
    assert " ERROR: " not in again.stderr, again.stderr[-3000:]
    lines = lines_of(again.stdout)
    assert lines["mojeek"]["outcome"] == "not sent: its breaker is open (see `scrapy engines`)"
    assert lines["mojeek"]["path"] is None
    assert lines["duckduckgo"]["outcome"] == "ok: 10 results"
    assert len(simulator.requests("mojeek")) == 1


def test_a_token_page_answered_is_not_the_check_page_1_that_got_no_answer_is(
    start_simulator, db_path, tmp_path
):
    simulator = start_simulator("--drop-at", "startpage:1")

    result = check_engines(simulator, db_path, tmp_path / "data", "startpage")

    assert result.returncode == 1
    line = lines_of(result.stdout)["startpage"]
    assert line["outcome"].startswith("error: ") and line["path"] is None
    assert simulator.requests("startpage")[0]["path"] == "/"  # the token page was answered


def test_every_enabled_engine_is_checked_and_all_ok_exits_0(start_simulator, db_path, tmp_path):
    simulator = start_simulator("--no-google-js")

    result = check_engines(simulator, db_path, tmp_path / "data", LYRA_BROWSER_ENABLED="false")

    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    lines = lines_of(result.stdout)
    assert list(lines) == usable_engines(CONFIG)
    assert all(line["outcome"].startswith("ok: ") for line in lines.values()), result.stdout
    assert {r["params"].get("q") for r in simulator.requests("mojeek")} == {"climate change"}
    assert "ERROR" not in result.stderr


def test_an_unknown_engine_is_refused_before_any_request(simulator, db_path, tmp_path):
    result = check_engines(simulator, db_path, tmp_path / "data", "mojeek", "nosuch")

    assert result.returncode == 2
    assert result.stderr.startswith("error: engine 'nosuch' is unknown: use one of ")
    assert simulator.requests() == []
