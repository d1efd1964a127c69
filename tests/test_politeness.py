"""Politeness across processes: quotas, the shared rate gate, circuit breaker, interventions,
last-mile choice and rollback switches, against the simulator and real SQLite files."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.crawler import CrawlerRunner
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import reactor
from twisted.internet.defer import DeferredList, ensureDeferred, gatherResults
from twisted.internet.task import deferLater
from twisted.internet.threads import deferToThread

from lyra_crawl.config import load_config
from lyra_crawl.records import QueryRecord
from lyra_crawl.session.request_state import META_KEY, RequestState
from tests.conftest import (
    Simulator,
    assert_no_errors,
    crawl_settings,
    edited_config,
    logged_errors,
    query_db,
    run_crawl,
    run_scrapy,
    start_scrapy,
    with_store,
)

EditPolicy = Callable[[dict[str, Any]], None]


@pytest.fixture
def config_dir(tmp_path: Path) -> Callable[[EditPolicy], Path]:
    """Factory: a copy of config/ whose engines.yaml document was changed by `edit`."""

    def make(edit: EditPolicy) -> Path:
        return edited_config(tmp_path / "config", edit)

    return make


def start_crawl_processes(
    simulator: Simulator, db_path: Path, config: Path, *, rate_limit: bool
) -> list[subprocess.Popen[str]]:
    """Four `scrapy crawl serp` processes of 3 mojeek pages each, started at once."""
    args = ("-a", "engine=mojeek", "-a", "serp_max_pages=3")
    environment = {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_DB_PATH": str(db_path),
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_RATE_LIMIT_ENABLED": str(rate_limit).lower(),
    }
    return [
        start_scrapy("crawl", "serp", "-a", f"query=river delta {n}", *args, env=environment)
        for n in range(4)
    ]


def finished(processes: list[subprocess.Popen[str]]) -> list[subprocess.CompletedProcess[str]]:
    results = []
    for process in processes:
        out, err = process.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def crawl_processes(
    simulator: Simulator, db_path: Path, config: Path, *, rate_limit: bool
) -> list[subprocess.CompletedProcess[str]]:
    return finished(start_crawl_processes(simulator, db_path, config, rate_limit=rate_limit))


def wait_for_a_rate_waiter(db_path: Path, engine: str, timeout_s: float = 60) -> None:
    """Until a process refused `engine`'s send slot is recorded as waiting for its release."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # Read only once a crawl made the file: connecting first would make an empty one.
        try:
            if db_path.exists() and query_db(
                db_path, "SELECT 1 FROM engine_rate_waiters WHERE engine = ?", (engine,)
            ):
                return
        except sqlite3.OperationalError:  # the store's tables are not made yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"no process waited for {engine}'s send slot in {timeout_s} s")


def stop_reasons(db_path: Path) -> list[dict[str, str]]:
    rows = query_db(db_path, "SELECT stop_reason FROM queries ORDER BY id")
    return [json.loads(row["stop_reason"]) for row in rows]


def health(db_path: Path, engine: str) -> dict[str, Any]:
    (row,) = query_db(db_path, "SELECT * FROM engine_health WHERE engine = ?", (engine,))
    return dict(row)


# -- daily quota and rate limit across processes ------------------------------------------------


def test_four_processes_share_a_daily_limit_of_five(simulator, db_path, config_dir):
    config = config_dir(lambda doc: doc["engines"]["mojeek"].update(daily_limit=5))

    results = crawl_processes(simulator, db_path, config, rate_limit=False)

    assert all(r.returncode == 0 for r in results), results[0].stderr[-2000:]
    assert not any("database is locked" in r.stderr for r in results)
    assert len(simulator.requests("mojeek")) == 5
    reasons = [r["mojeek"] for r in stop_reasons(db_path)]
    assert sorted(reasons).count("max_pages") <= 1
    assert all(reason in ("quota", "max_pages") for reason in reasons)
    assert reasons.count("quota") >= 3
    assert any("daily quota spent" in r.stderr for r in results)
    (usage,) = query_db(db_path, "SELECT usage_count FROM engine_usage WHERE engine = 'mojeek'")
    assert usage["usage_count"] == 5


def test_four_processes_keep_requests_one_tenth_of_a_second_apart(
    start_simulator, db_path, config_dir
):
    # The first page answered only once another process waits for the slot it holds: the
    # processes overlap however slowly a loaded machine starts them.
    simulator = start_simulator("--hold-at", "mojeek:1")
    config = config_dir(lambda doc: doc["engines"]["mojeek"].update(qps=10))

    processes = start_crawl_processes(simulator, db_path, config, rate_limit=True)
    wait_for_a_rate_waiter(db_path, "mojeek")
    simulator.release("mojeek", 1)
    results = finished(processes)

    assert all(r.returncode == 0 for r in results), results[0].stderr[-2000:]
    times = sorted(r["time"] for r in simulator.requests("mojeek"))
    assert len(times) == 12
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.095, gaps
    # A process refused the slot another holds was told of its release, never left to look
    # again on its own (the simulator answers well within RELEASE_CHECK_S once released).
    logs = "".join(r.stderr for r in results)
    assert " ERROR: " not in logs, logs[-3000:]
    assert "'lyra/mojeek/rate/release_waits'" in logs
    assert "rate/release_waits_unheard" not in logs


class TwoEngineSpider(scrapy.Spider):
    """Page-one requests to two engines in one crawl, the way a batch of queries sends them."""

    name = "two_engines"

    def __init__(self, simulator_url: str, requests: dict[str, int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.simulator_url = simulator_url
        self.plan = requests

    async def start(self) -> AsyncIterator[scrapy.Request]:
        paths = {
            "mojeek": "/mojeek/search?q=tide+{n}",
            "duckduckgo": "/duckduckgo/html/?q=tide+{n}",
        }
        for engine, count in self.plan.items():
            for n in range(count):
                url = self.simulator_url + paths[engine].format(n=n)
                yield scrapy.Request(
                    url,
                    meta={META_KEY: RequestState(0, engine, 1, url), "download_slot": engine},
                    dont_filter=True,
                    callback=lambda response: None,
                )


@pytest_twisted.ensureDeferred
async def test_a_slow_engine_waiting_does_not_hold_up_a_fast_one(simulator, db_path, config_dir):
    def edit(doc: dict[str, Any]) -> None:
        # Four seconds between mojeek's two requests: ten duckduckgo ones at 50 a second fit
        # in them many times over, however loaded the machine is.
        doc["engines"]["mojeek"]["qps"] = 0.25
        doc["engines"]["duckduckgo"]["qps"] = 50

    settings = crawl_settings(
        simulator,
        db_path,
        LYRA_CONFIG_DIR=str(config_dir(edit)),
        LYRA_RATE_LIMIT_ENABLED=True,
        # Small enough that the waiting mojeek request would fill it, were waits counted.
        CONCURRENT_REQUESTS=1,
    )
    crawler = CrawlerRunner(settings).create_crawler(TwoEngineSpider)
    with logged_errors() as errors:
        await deferred_from_coro(
            crawler.crawl_async(
                simulator_url=simulator.url, requests={"mojeek": 2, "duckduckgo": 10}
            )
        )
    assert_no_errors(crawler, errors)

    slow = [r["time"] for r in simulator.requests("mojeek")]
    fast = [r["time"] for r in simulator.requests("duckduckgo")]
    assert len(slow) == 2 and len(fast) == 10
    assert max(fast) < max(slow), "every fast request before the slow engine's second"


# -- blocks, circuit breaker, interventions -----------------------------------------------------


def short_cooldowns(doc: dict[str, Any]) -> None:
    doc["breaker"]["cooldown_s"].update(captcha=1.5, network=1.0)


async def captcha_opens_the_breaker(db_path: Path, settings: dict[str, Any], blocking) -> None:
    """A duckduckgo crawl whose page 3 is a CAPTCHA: the breaker opens, an intervention waits."""
    await run_crawl(
        blocking, db_path, settings, query="salt marsh", engine="duckduckgo", serp_max_pages=5
    )


@pytest_twisted.ensureDeferred
async def test_a_captcha_opens_the_breaker_and_nothing_is_sent_while_it_is_open(
    start_simulator, db_path, config_dir
):
    # The bundled hour-long cool-down: the second crawl comes while it lasts, however slowly.
    settings: dict[str, Any] = {}
    blocking = start_simulator("--captcha-at", "duckduckgo:3")
    await captcha_opens_the_breaker(db_path, settings, blocking)

    pages = query_db(db_path, "SELECT DISTINCT page_number FROM serp_items ORDER BY page_number")
    assert [p["page_number"] for p in pages] == [1, 2]
    (intervention,) = query_db(db_path, "SELECT * FROM intervention_queue")
    assert (intervention["engine"], intervention["kind"], intervention["status"]) == (
        "duckduckgo",
        "captcha",
        "open",
    )
    assert intervention["query_id"] == 1
    breaker = health(db_path, "duckduckgo")
    assert breaker["state"] == "open" and breaker["last_reason"] == "captcha"

    crawler = await run_crawl(blocking, db_path, settings, query="mangroves", engine="duckduckgo")
    assert len(blocking.requests("duckduckgo")) == 3, "nothing sent while the breaker is open"
    assert stop_reasons(db_path)[-1] == {"duckduckgo": "blocked"}
    assert crawler.stats.get_value("lyra/duckduckgo/refused/blocked") == 1


@pytest_twisted.ensureDeferred
async def test_after_the_cooldown_one_trial_goes_alone_and_its_answer_closes_the_breaker(
    start_simulator, db_path, config_dir
):
    settings = {"LYRA_CONFIG_DIR": str(config_dir(short_cooldowns))}
    await captcha_opens_the_breaker(
        db_path, settings, start_simulator("--captcha-at", "duckduckgo:3")
    )
    breaker = health(db_path, "duckduckgo")
    assert breaker["state"] == "open"
    # The cool-down itself is what is tested: the trial comes only once it has passed.
    await deferLater(reactor, max(0.0, breaker["open_until"] - time.time()) + 0.1)
    trial = start_simulator("--hold-at", "duckduckgo:1")
    crawls = [
        ensureDeferred(
            run_crawl(trial, db_path, settings, query=q, engine="duckduckgo", serp_max_pages=1)
        )
        for q in ("estuary", "lagoon")
    ]

    # While the trial's answer is held, the other crawl is refused and ends without a request.
    assert await deferToThread(trial.held, "duckduckgo", 1)
    refused, _ = await DeferredList(crawls, fireOnOneCallback=True, fireOnOneErrback=True)
    assert refused.stats.get_value("lyra/duckduckgo/refused/blocked") == 1
    assert len(trial.requests("duckduckgo")) == 1, "exactly one half-open trial"
    trial.release("duckduckgo", 1)
    await gatherResults(crawls)

    assert len(trial.requests("duckduckgo")) == 1, "exactly one half-open trial"
    assert sorted(r["duckduckgo"] for r in stop_reasons(db_path)[-2:]) == ["blocked", "max_pages"]
    assert health(db_path, "duckduckgo")["state"] == "closed"


@pytest_twisted.ensureDeferred
async def test_429_cools_down_for_its_retry_after(start_simulator, db_path):
    simulator = start_simulator("--status-at", "mojeek:2:429", "--retry-after", "40")
    before = time.time()
    await run_crawl(simulator, db_path, query="kelp", engine="mojeek", serp_max_pages=3)

    breaker = health(db_path, "mojeek")
    assert breaker["last_reason"] == "rate_limited"
    assert before + 40 <= breaker["open_until"] < time.time() + 40
    assert stop_reasons(db_path) == [{"mojeek": "blocked"}]
    (intervention,) = query_db(db_path, "SELECT kind FROM intervention_queue")
    assert intervention["kind"] == "rate_limited"


@pytest.mark.parametrize("engine", ["wikipedia", "wikidata"])
@pytest_twisted.ensureDeferred
async def test_a_mediawiki_api_whose_replicas_lag_cools_down_for_its_retry_after(
    engine, start_simulator, db_path
):
    # The replicas lag 8 s: an answer only to requests asking maxlag=5 or less, as MediaWiki's.
    simulator = start_simulator("--replica-lag", f"{engine}:8")
    before = time.time()
    await run_crawl(simulator, db_path, query="kelp", engine=engine, serp_max_pages=3)

    (request,) = simulator.requests(engine)
    assert request["params"]["maxlag"] == "5"
    (page,) = query_db(db_path, "SELECT outcome, results FROM serp_pages")
    assert (page["outcome"], page["results"]) == ("rate_limited", 0)
    breaker = health(db_path, engine)
    assert breaker["last_reason"] == "rate_limited"
    assert before + 5 <= breaker["open_until"] < time.time() + 5
    assert stop_reasons(db_path) == [{engine: "blocked"}]


@pytest_twisted.ensureDeferred
async def test_dropped_connections_keep_earlier_pages_and_open_the_breaker(
    start_simulator, db_path, config_dir
):
    settings = {"LYRA_CONFIG_DIR": str(config_dir(short_cooldowns))}
    simulator = start_simulator("--drop-at", "mojeek:3")
    await run_crawl(
        simulator,
        db_path,
        settings,
        query="seagrass",
        engine="mojeek",
        serp_max_pages=5,
        expect_errors=True,
    )

    pages = query_db(db_path, "SELECT DISTINCT page_number FROM serp_items ORDER BY page_number")
    assert [p["page_number"] for p in pages] == [1, 2]
    assert stop_reasons(db_path) == [{"mojeek": "error"}]
    # RetryMiddleware's two retries make three failures in a row: the configured threshold.
    breaker = health(db_path, "mojeek")
    assert (breaker["state"], breaker["last_reason"], breaker["trips"]) == ("open", "network", 1)
    assert query_db(db_path, "SELECT * FROM intervention_queue") == []


# -- engine choice and rollback switches ----------------------------------------------------------


def mojeek_is_lastmile(doc: dict[str, Any]) -> None:
    """Mojeek as the only last-mile engine, with a daily limit of one request."""
    doc["engines"]["mojeek"].update(lastmile=True, pagination_enabled=False, daily_limit=1)
    doc["lastmile"]["order"].insert(0, "mojeek")
    doc["lastmile"]["max_share"] = 1.0  # the tests below are about quota; the cap has its own
    for name in doc["lastmile"]["order"][1:]:
        doc["engines"][name]["enabled"] = False


@pytest_twisted.ensureDeferred
async def test_a_high_harvest_rate_goes_last_mile_with_one_page(simulator, db_path, config_dir):
    settings = {"LYRA_CONFIG_DIR": str(config_dir(mojeek_is_lastmile))}
    await run_crawl(simulator, db_path, settings, query="dune", harvest_rate="0.95")

    (row,) = query_db(db_path, "SELECT engine, selection, stop_reason FROM queries")
    selection = json.loads(row["selection"])
    assert row["engine"] == selection["engine"] == "mojeek"
    assert selection["should_use_lastmile"] is True
    assert (selection["harvest_rate"], selection["threshold"]) == (0.95, 0.9)
    assert len(simulator.requests("mojeek")) == 1, "last-mile engines fetch one page"


@pytest_twisted.ensureDeferred
async def test_last_mile_falls_back_when_its_quota_is_spent(simulator, db_path, config_dir):
    settings = {"LYRA_CONFIG_DIR": str(config_dir(mojeek_is_lastmile))}
    earlier_query(db_path, "task-7", harvest_rate=0.93)
    for query in ("first dune", "second dune"):
        await run_crawl(simulator, db_path, settings, query=query, task_id="task-7")

    rows = query_db(db_path, "SELECT engine, selection FROM queries WHERE query_text LIKE '%dune'")
    first, second = (json.loads(r["selection"]) for r in rows)
    assert first["engine"] == "mojeek" and first["harvest_rate"] == pytest.approx(0.93)
    assert second["should_use_lastmile"] is True
    assert second["engine"] is not None and second["engine"] != "mojeek"
    assert not load_config(settings["LYRA_CONFIG_DIR"]).policy(second["engine"]).lastmile
    assert "no last-mile engine is available" in second["reason"]


def earlier_query(db_path: Path, task_id: str, *, harvest_rate: float) -> None:
    """An earlier, finished query of the task with the given harvest rate."""

    async def finished_query(backends) -> int:
        store = backends.store
        query_id = await store.start_query(
            QueryRecord("earlier", "earlier", "duckduckgo", 1, 1, "auto", task_id=task_id)
        )
        await store.finish_query(
            query_id,
            status="finished",
            stop_reasons={"duckduckgo": "quota"},
            errors={},
            relevance_threshold=None,
        )
        return query_id

    query_id = with_store(db_path, finished_query)
    # Its items are not part of this test: only the harvest rate the query row reports.
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE queries SET harvest_rate = ? WHERE id = ?", (harvest_rate, query_id))


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # Paging switched off for the engine says so, not max_pages (issue 12).
        (
            lambda doc: doc["engines"]["mojeek"].update(pagination_enabled=False),
            "pagination_disabled",
        ),
        (lambda doc: doc["pagination"].update(serp_max_pages=1), "max_pages"),
    ],
    ids=["pagination_enabled_false", "serp_max_pages_1"],
)
@pytest_twisted.ensureDeferred
async def test_rollback_switches_limit_an_engine_to_one_page(
    simulator, db_path, config_dir, edit, reason, caplog
):
    settings = {"LYRA_CONFIG_DIR": str(config_dir(edit))}
    await run_crawl(simulator, db_path, settings, query="fjord", engine="mojeek")

    assert len(simulator.requests("mojeek")) == 1
    assert stop_reasons(db_path) == [{"mojeek": reason}]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    named = [w for w in warnings if "pagination_enabled: false in engines.yaml" in w]
    assert len(named) == (reason == "pagination_disabled"), warnings


# -- commands -----------------------------------------------------------------------------------


def scrapy_command(*args: str, db_path: Path) -> subprocess.CompletedProcess[str]:
    return run_scrapy(*args, env={"LYRA_DB_PATH": str(db_path)}, timeout=60)


@pytest_twisted.ensureDeferred
async def test_engines_and_interventions_commands(start_simulator, db_path):
    simulator = start_simulator("--captcha-at", "duckduckgo:2")
    await run_crawl(simulator, db_path, query="delta", engine="duckduckgo", serp_max_pages=3)

    engines = scrapy_command("engines", db_path=db_path)
    assert engines.returncode == 0, engines.stderr[-2000:]
    (line,) = [ln for ln in engines.stdout.splitlines() if ln.startswith("duckduckgo")]
    assert "open until" in line and "2/-" in line and "qps 0.2" in line
    assert any(ln.startswith("google") and "0/10" in ln for ln in engines.stdout.splitlines())

    listing = scrapy_command("interventions", db_path=db_path)
    assert listing.returncode == 0, listing.stderr[-2000:]
    assert "1  duckduckgo  captcha" in listing.stdout
    resolved = scrapy_command("interventions", "--resolve", "1", db_path=db_path)
    assert resolved.returncode == 0 and "resolved intervention 1" in resolved.stdout
    assert (
        scrapy_command("interventions", db_path=db_path).stdout.strip() == "no open interventions"
    )
    again = scrapy_command("interventions", "--resolve", "1", db_path=db_path)
    assert again.returncode == 2 and "no open intervention 1" in again.stderr
