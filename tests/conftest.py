"""Shared fixtures: the simulator over loopback HTTP, in-process crawls, real SQLite files, and
real database servers (tests/servers)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_from_coro

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.simulator.process import running_simulator
from lyra_crawl.spiders.serp import SerpSpider
from tests.scrapyd_server import ScrapydServer, deploy, running_scrapyd

pytest_plugins = ["tests.servers.postgres", "tests.servers.redis"]

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
SERP_ONLY = "serp"
REALWORLD_DIR = Path(os.environ.get("LYRA_REALWORLD_DIR") or ROOT.parent / "shared" / "realworld")


@dataclass
class Simulator:
    url: str
    log_path: Path

    def requests(self, engine: str | None = None) -> list[dict[str, Any]]:
        """Every request the simulator received, in order, optionally for one engine."""
        if not self.log_path.exists():
            return []
        entries = [json.loads(line) for line in self.log_path.read_text().splitlines() if line]
        return [e for e in entries if engine is None or e["engine"] == engine]


@pytest.fixture
def start_simulator(tmp_path: Path) -> Iterator[Any]:
    """Factory: start_simulator(*options) -> Simulator, stopped at the end of the test."""
    with ExitStack() as stack:
        count = 0

        def start(*options: str) -> Simulator:
            nonlocal count
            count += 1
            log_path = tmp_path / f"simulator-{count}.jsonl"
            url = stack.enter_context(running_simulator(["--request-log", str(log_path), *options]))
            return Simulator(url=url, log_path=log_path)

        yield start


@pytest.fixture
def simulator(start_simulator: Any) -> Simulator:
    return start_simulator()


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections, which no server can take during the test: a
    socket bound there that never listens."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        yield holder.getsockname()[1]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "lyra.sqlite3"


def crawl_settings(simulator: Simulator, db_path: Path, **overrides: Any) -> Settings:
    settings = Settings()
    settings.setmodule("lyra_crawl.settings", priority="project")
    settings.update(
        {
            "LYRA_SIMULATOR_URL": simulator.url,
            "LYRA_DB_PATH": str(db_path),
            "LYRA_RATE_LIMIT_ENABLED": False,
            "LOG_LEVEL": "WARNING",
            **overrides,
        },
        priority="cmdline",
    )
    return settings


async def run_crawl(
    simulator: Simulator,
    db_path: Path,
    settings: dict[str, Any] | None = None,
    *,
    expect_errors: bool = False,
    **spider_args: Any,
) -> Crawler:
    """Run one `serp` crawl in this process (the reactor is pytest-twisted's).

    Tests of one engine's behaviour crawl that engine alone (`sources=serp`) unless they say
    otherwise; the scholarly sources that join every real crawl are tested on their own. A
    crawl that logged an error fails the test unless the test expects errors.
    """
    runner = CrawlerRunner(crawl_settings(simulator, db_path, **(settings or {})))
    crawler = runner.create_crawler(SerpSpider)
    spider_args.setdefault("sources", SERP_ONLY)
    with logged_errors() as errors:
        await deferred_from_coro(crawler.crawl_async(**spider_args))
    if not expect_errors:
        assert_no_errors(crawler, errors)
    return crawler


@contextmanager
def logged_errors() -> Iterator[list[str]]:
    """The ERROR records logged while the block runs, as text."""
    errors: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            errors.append(self.format(record))

    handler = Collect(level=logging.ERROR)
    logging.getLogger().addHandler(handler)
    try:
        yield errors
    finally:
        logging.getLogger().removeHandler(handler)


def assert_no_errors(crawler: Crawler, errors: Sequence[str] = ()) -> None:
    """The crawl logged no error (Scrapy counts them under log_count/ERROR)."""
    count = crawler.stats.get_value("log_count/ERROR", 0)
    assert count == 0, f"the crawl logged {count} error(s): {list(errors)[:3]}"


def run_scrapy(
    *args: str, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess:
    """`scrapy ARGS` in the project folder, with `env` over this environment."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def scrapy_env(simulator: Simulator, db_path: Path) -> dict[str, str]:
    """The environment of a `scrapy crawl` subprocess against `simulator`, writing `db_path`."""
    return {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_DB_PATH": str(db_path),
        "LYRA_RATE_LIMIT_ENABLED": "false",
    }


def start_scrapy(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`scrapy ARGS` started in the project folder and left running; stderr is piped."""
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def with_store(
    db_path: Path,
    work: Callable[[Backends], Awaitable[T]],
    *,
    coordination_url: str | None = None,
) -> T:
    """`work(backends)` on the SQLite file `db_path` (and the coordinator `coordination_url`
    names, else that same file), from a synchronous test."""
    settings = {"LYRA_DB_PATH": str(db_path), "LYRA_COORDINATION_URL": coordination_url}
    return in_own_loop(with_backends(settings, work))


def in_own_loop(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on an event loop of its own thread: pytest-twisted's reactor owns this
    thread's loop, and Twisted-driven test coroutines cannot await asyncio futures."""
    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, work).result()


def query_db(db_path: Path, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db_path)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def realworld_dir() -> Path:
    if not REALWORLD_DIR.is_dir():
        pytest.skip(f"realworld pages not found at {REALWORLD_DIR} (set LYRA_REALWORLD_DIR)")
    return REALWORLD_DIR


@pytest.fixture(scope="session")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScrapydServer]:
    """A real Scrapyd on loopback with this project deployed by scrapyd-deploy (session-wide)."""
    folder = tmp_path_factory.mktemp("scrapyd")
    with running_scrapyd(folder / "server") as server:
        deploy(server, ROOT, folder / "project")
        yield server


def edited_config(folder: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """`folder` (created) holding a copy of config/ whose engines.yaml `edit` changed."""
    folder.mkdir(parents=True, exist_ok=True)
    for source in (ROOT / "config").glob("*.yaml"):
        (folder / source.name).write_text(source.read_text())
    policy = yaml.safe_load((folder / "engines.yaml").read_text())
    edit(policy)
    (folder / "engines.yaml").write_text(yaml.safe_dump(policy))
    return folder
