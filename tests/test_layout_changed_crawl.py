"""A results page in a changed layout, end to end on the simulator.

The source stops with reason layout_changed, the page is stored with that outcome, counted and
saved for parse-serp; the breaker stays closed and no intervention is queued; the crawl logs
one WARNING naming the fix, no ERROR, and exits 0 (a stale parser is not a crawl failure);
`scrapy engines` says the parser is stale until a page is read again.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from urllib.request import urlopen

import pytest_twisted

from lyra_crawl.politeness.breaker import BreakerState
from tests.conftest import query_db, run_crawl, run_scrapy, scrapy_env, with_store

STALE_LINE = re.compile(
    r" +parser stale since \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \((?P<pages>[^;]+); "
    r"last page: (?P<path>.+)\)"
)
LYRA_WARNING = re.compile(r"\[lyra_crawl[.\w]*\] WARNING: ")
MOJEEK = {"query": "glacier melt", "engine": "mojeek", "serp_max_pages": 4, "cache": "off"}


def pages(db_path: Path) -> list[tuple[int, int, str, int]]:
    found = query_db(
        db_path,
        "SELECT query_id, page_number, outcome, results FROM serp_pages"
        " ORDER BY query_id, page_number",
    )
    return [tuple(row) for row in found]


@pytest_twisted.ensureDeferred
async def test_a_changed_layout_ends_its_source_without_a_block_and_keeps_the_page(
    start_simulator, db_path, tmp_path, caplog
):
    simulator = start_simulator("--layout-changed-at", "mojeek:2")
    data = tmp_path / "data"

    with caplog.at_level(logging.WARNING):
        crawler = await run_crawl(simulator, db_path, {"LYRA_DATA_DIR": str(data)}, **MOJEEK)

    assert pages(db_path) == [(1, 1, "ok", 10), (1, 2, "layout_changed", 0)]
    assert len(simulator.requests("mojeek")) == 2  # no page 3: the source stopped
    (row,) = query_db(db_path, "SELECT status, stop_reason FROM queries")
    assert row["status"] == "finished"
    assert json.loads(row["stop_reason"]) == {"mojeek": "layout_changed"}
    stats = crawler.stats.get_stats()
    assert stats["lyra/mojeek/outcome/layout_changed"] == 1
    assert stats["lyra/stop_reason/layout_changed"] == 1
    assert not [key for key in stats if "/block/" in key]

    async def politeness(backends):
        health = await backends.coordinator.breaker_health("mojeek")
        return health, await backends.store.open_interventions()

    health, interventions = with_store(db_path, politeness)
    assert health.state is BreakerState.CLOSED and health.consecutive_failures == 0
    assert interventions == []

    (saved,) = (data / "stale" / "mojeek").iterdir()
    assert saved.name.endswith("-q1-p2.html")
    assert saved.read_bytes() == simulator_page(simulator, "mojeek", "/search?q=glacier+melt&s=11")
    (warning,) = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("lyra_crawl")
    ]
    assert warning.startswith("mojeek page 2 is in a layout the parser does not read (")
    assert "no result container of any layout (current)" in warning
    assert (
        f"update mojeek's parse rules in search_parsers.yaml until "
        f"`scrapy parse-serp mojeek {saved} --page 2` reads it"
    ) in warning


def simulator_page(simulator, engine: str, path: str) -> bytes:
    """The body the simulator serves for `path` of `engine` now (its answers are stable)."""
    with urlopen(f"{simulator.url}/{engine}{path}", timeout=10) as answer:
        return answer.read()


def test_a_stale_parser_exits_0_and_scrapy_engines_points_at_its_last_page(
    start_simulator, db_path, tmp_path
):
    changed = start_simulator("--layout-changed-at", "mojeek:1", "--layout-changed-at", "bing:1")
    data = tmp_path / "data"
    env = {**scrapy_env(changed, db_path), "LYRA_DATA_DIR": str(data)}
    crawl_args = ["-a", "query=tide pools", "-a", "sources=serp", "-a", "cache=off"]

    crawled = run_scrapy("crawl", "serp", *crawl_args, "-a", "engine=mojeek", env=env)
    run_scrapy("crawl", "serp", *crawl_args, "-a", "engine=bing", env=env)

    assert crawled.returncode == 0, crawled.stderr[-2000:]
    assert "ERROR" not in crawled.stderr
    warnings = [line for line in crawled.stderr.splitlines() if LYRA_WARNING.search(line)]
    assert len(warnings) == 1 and "in a layout the parser does not read" in warnings[0]
    (saved,) = (data / "stale" / "mojeek").iterdir()
    engines = run_scrapy("engines", env=env)
    assert engines.returncode == 0, engines.stderr
    lines = engines.stdout.splitlines()
    after_mojeek = lines[next(i for i, line in enumerate(lines) if line.startswith("mojeek ")) + 1]
    stale = STALE_LINE.fullmatch(after_mojeek)
    assert stale is not None, after_mojeek
    assert stale["pages"] == "1 page" and stale["path"] == str(saved)
    parsed = run_scrapy("parse-serp", "mojeek", str(saved), env=env)
    assert parsed.returncode == 4 and "layout_changed: no result container" in parsed.stderr

    # A page of mojeek read again (the rules fixed, or the engine back): no longer stale;
    # bing, not crawled again, still is.
    fixed = start_simulator()
    run_scrapy("crawl", "serp", *crawl_args, "-a", "engine=mojeek", env=scrapy_env(fixed, db_path))
    lines = run_scrapy("engines", env=env).stdout.splitlines()
    stale = [lines[i - 1].split()[0] for i, line in enumerate(lines) if "parser stale" in line]
    assert stale == ["bing"]


@pytest_twisted.ensureDeferred
async def test_a_query_cut_short_by_a_changed_layout_is_not_served_from_the_cache(
    start_simulator, db_path, tmp_path
):
    simulator = start_simulator("--layout-changed-at", "mojeek:2")
    cached = {**MOJEEK, "cache": "use"}
    data = {"LYRA_DATA_DIR": str(tmp_path / "data")}

    await run_crawl(simulator, db_path, data, **cached)
    await run_crawl(simulator, db_path, data, **cached)

    assert query_db(db_path, "SELECT COUNT(*) AS n FROM serp_cache")[0]["n"] == 0
    assert len(simulator.requests("mojeek")) == 4  # asked again: pages 1 and 2, twice
