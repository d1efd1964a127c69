"""Shared fixtures: the simulator over loopback HTTP, in-process crawls, real SQLite files, and
real database servers (tests/servers); and the test tiers.

Tiers: a test that needs a server (the simulator, PostgreSQL, Redis, Scrapyd) is marked `server`
and one that drives Chromium `browser`, both from the fixtures it uses; a test that starts a
process of its own (`scrapy crawl`, a Python probe) says so with `subprocess`. `make check` runs
the rest, the fast tier. A test that starts a process without one of these markers fails (the
interpreter's audit hook sees every process started), so the fast tier stays fast.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import pytest
import yaml
from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.settings import Settings
from scrapy.utils.defer import deferred_from_coro

from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.simulator.process import running_simulator
from lyra_crawl.spiders.serp import SerpSpider
from tests.scrapyd_server import ScrapydServer, build_egg, deploy, running_scrapyd

pytest_plugins = ["tests.servers.postgres", "tests.servers.redis"]

# A test using one of these (directly or through another fixture) is in the `server` tier...
SERVER_FIXTURES = frozenset(
    {"simulator", "start_simulator", "scrapyd", "postgres_server", "redis_server"}
)
# ... and so is one parametrized with a backend on a server, whose fixture starts it on demand
# (request.getfixturevalue("postgres_url")).
SERVER_BACKENDS = frozenset({"postgresql", "redis", "postgres+redis", "sqlite+redis"})
# One using these is in the `browser` tier.
BROWSER_FIXTURES = frozenset({"chromium"})
SLOW_TIERS = ("server", "browser", "subprocess")
# The audit events of starting a process (sys.addaudithook).
PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.system", "os.fork", "os.forkpty", "os.exec"}
)
_started: list[str] = []


def _note_process(event: str, args: tuple[Any, ...]) -> None:
    if event in PROCESS_EVENTS:
        _started.append(f"{event} {str(args[:2])[:200]}")


sys.addaudithook(_note_process)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers a test's fixtures put it in; the order parallel workers take tests in."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        params = set(map(str, callspec.params.values())) if callspec else set()
        if used & SERVER_FIXTURES or params & SERVER_BACKENDS:
            item.add_marker(pytest.mark.server)
        if used & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if _uses_module_fixture(item):
            # One worker runs them (`--dist loadgroup`), so the fixture is made once.
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    # The longest first, then the other slow tiers; the fast tier fills the workers' ends.
    items.sort(key=_start_order)


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info else ()
    return any(d[-1].scope == "module" for d in definitions if d)


def _start_order(item: pytest.Item) -> int:
    if item.get_closest_marker("long"):
        return 0
    return 1 if any(item.get_closest_marker(tier) for tier in SLOW_TIERS) else 2


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _started.clear()  # before any fixture of this test, the module's and session's included


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A test in the fast tier that started a process fails at teardown, naming the process."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or not _started or not report.passed:
        return
    if not any(item.get_closest_marker(tier) for tier in SLOW_TIERS):
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started a process ({_started[0]}) but is in the fast tier: mark it "
            "@pytest.mark.subprocess (or use the simulator's or a server's fixture)"
        )


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

    def held(self, engine: str, page: int, count: int = 1, timeout_s: float = 30.0) -> bool:
        """Whether `count` requests for a page held by `--hold-at ENGINE:PAGE` wait for their
        release, within `timeout_s` (answered as soon as they do)."""
        try:
            self._control("held", engine, page, count=count, timeout=timeout_s)
        except urllib.error.HTTPError as exc:
            if exc.code == 408:
                return False
            raise
        return True

    def release(self, engine: str, page: int) -> None:
        """Let the held requests for the page, and every later one, be answered."""
        self._control("release", engine, page, method="POST")

    def _control(self, action: str, engine: str, page: int, method: str = "GET", **more: Any):
        query = urllib.parse.urlencode({"engine": engine, "page": page, **more})
        request = urllib.request.Request(f"{self.url}/_control/{action}?{query}", method=method)
        timeout_s = float(more.get("timeout", 0)) + 30
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            answer.read()


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


def start_scrapy(*args: str, env: dict[str, str], stdout: bool = False) -> subprocess.Popen[str]:
    """`scrapy ARGS` started in the project folder and left running; stderr is piped, and
    stdout too if asked."""
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


class Lines:
    """A process's output (its stdout or stderr pipe) read as it comes, on a thread of its own,
    so a test can wait for a line (an event the process reports) and still get every line."""

    def __init__(self, stream: IO[str] | None) -> None:
        assert stream is not None, "the process's output is not a pipe"
        self._stream = stream
        self._lines: list[str] = []
        self._ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self._stream:
            with self._changed:
                self._lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def _count(self, text: str) -> int:
        return sum(text in line for line in self._lines)

    def wait_for(self, text: str, count: int = 1, timeout_s: float = 60) -> None:
        """Until `count` lines hold `text`; fails if the output ends or `timeout_s` passes."""
        with self._changed:
            self._changed.wait_for(lambda: self._count(text) >= count or self._ended, timeout_s)
            found, said = self._count(text), "".join(self._lines)
        assert found >= count, f"{found} of {count} lines with {text!r}: {said[-3000:]}"

    def text(self, timeout_s: float = 60) -> str:
        """Everything written, once the output has ended (the process closed it)."""
        self._reader.join(timeout_s)
        with self._changed:
            assert self._ended, f"the output goes on after {timeout_s} s"
            return "".join(self._lines)


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
def project_egg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This project's egg, built once by scrapyd-deploy for every Scrapyd node of the session."""
    return build_egg(ROOT, tmp_path_factory.mktemp("egg"))


@pytest.fixture(scope="session")
def scrapyd(tmp_path_factory: pytest.TempPathFactory, project_egg: Path) -> Iterator[ScrapydServer]:
    """A real Scrapyd on loopback with this project deployed by scrapyd-deploy (session-wide)."""
    folder = tmp_path_factory.mktemp("scrapyd")
    with running_scrapyd(folder / "server") as server:
        deploy(server, ROOT, folder / "project", project_egg)
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
