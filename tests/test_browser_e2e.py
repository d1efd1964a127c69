"""Google rendered in real Chromium from the simulator, where results arrive only by script.

Chromium is Debian's package (`make test` installs it), Playwright's own, or LYRA_CHROMIUM_PATH.
Without one these tests fail with the fix in the message; LYRA_SKIP_BROWSER_TESTS=1 skips them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_twisted

from lyra_crawl.browser.chromium import ChromiumNotFound, chromium_executable
from lyra_crawl.browser.render import PLAYWRIGHT_HANDLER
from lyra_crawl.simulator.config import write_paging_config
from tests.conftest import run_crawl
from tests.test_crawl_e2e import assert_pages_stored, the_query
from tests.test_engines_e2e import page_outcomes

PLAYWRIGHT_OWN_CHROMIUM = (
    "from playwright.sync_api import sync_playwright\n"
    "with sync_playwright() as p:\n"
    "    print(p.chromium.executable_path)\n"
)


@pytest.fixture(scope="module")
def chromium() -> str:
    """The Chromium the crawls will launch; none is a failure unless LYRA_SKIP_BROWSER_TESTS=1."""
    # Asked in a child process: Playwright's sync API cannot run inside the test's event loop.
    own = subprocess.run(
        [sys.executable, "-c", PLAYWRIGHT_OWN_CHROMIUM], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        return chromium_executable(os.environ.get("LYRA_CHROMIUM_PATH"), own)
    except ChromiumNotFound as exc:
        if os.environ.get("LYRA_SKIP_BROWSER_TESTS") == "1":
            pytest.skip(f"LYRA_SKIP_BROWSER_TESTS=1: {exc}")
        pytest.fail(f"{exc}; or set LYRA_SKIP_BROWSER_TESTS=1 to skip browser tests", False)


@pytest.fixture
def google_config(tmp_path: Path) -> Path:
    """The bundled config (Google rendered in the browser), with pagination on for Google."""
    return write_paging_config(tmp_path / "config")


def crawl_google(simulator, db_path, config_dir: Path, **settings):
    return run_crawl(
        simulator,
        db_path,
        settings={"LYRA_CONFIG_DIR": str(config_dir), **settings},
        query="climate adaptation",
        engine="google",
        serp_max_pages=2,
    )


def playwright_stats(crawler) -> dict[str, int]:
    return {k: v for k, v in crawler.stats.get_stats().items() if k.startswith("playwright/")}


@pytest_twisted.ensureDeferred
async def test_google_pages_are_rendered_in_chromium_one_tab_at_a_time(
    chromium, simulator, db_path, google_config
):
    crawler = await crawl_google(simulator, db_path, google_config, LYRA_CHROMIUM_PATH=chromium)

    assert_pages_stored(db_path, "google", [1, 2])
    assert page_outcomes(db_path) == [(1, "ok"), (2, "ok")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {"google": "max_pages"}
    stats = playwright_stats(crawler)
    assert stats["playwright/browser_count"] == 1
    assert stats["playwright/page_count"] == stats["playwright/page_count/closed"] == 2
    assert stats["playwright/page_count/max_concurrent"] == 1
    # Through the downloader middlewares (DownloaderStats counts there), like any request.
    assert crawler.stats.get_value("downloader/request_count") == 2
    # The logo was aborted: the simulator saw only the two result pages.
    assert stats["playwright/request_count/aborted"] == 2
    assert [(r["engine"], r["path"]) for r in simulator.requests()] == [("google", "/search")] * 2


@pytest_twisted.ensureDeferred
async def test_without_the_browser_google_meets_its_javascript_wall(
    simulator, db_path, google_config
):
    crawler = await crawl_google(simulator, db_path, google_config, LYRA_BROWSER_ENABLED=False)

    assert page_outcomes(db_path) == [(1, "javascript_required")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {"google": "blocked"}
    assert playwright_stats(crawler) == {}
    assert PLAYWRIGHT_HANDLER not in crawler.settings.getdict("DOWNLOAD_HANDLERS").values()


@pytest_twisted.ensureDeferred
async def test_a_captcha_in_the_rendered_page_is_a_captcha(
    chromium, start_simulator, db_path, google_config
):
    simulator = start_simulator("--captcha-at", "google:2")
    crawler = await crawl_google(simulator, db_path, google_config)

    assert_pages_stored(db_path, "google", [1])
    assert page_outcomes(db_path) == [(1, "ok"), (2, "captcha")]
    assert json.loads(the_query(db_path)["stop_reason"]) == {"google": "blocked"}
    assert crawler.stats.get_value("lyra/google/outcome/captcha") == 1


@pytest_twisted.ensureDeferred
async def test_crawls_of_http_engines_never_load_playwright(simulator, db_path):
    crawler = await run_crawl(
        simulator, db_path, query="climate adaptation", engine="mojeek", serp_max_pages=1
    )

    assert crawler.stats.get_value("lyra/mojeek/outcome/ok") == 1
    assert playwright_stats(crawler) == {}
    assert PLAYWRIGHT_HANDLER not in crawler.settings.getdict("DOWNLOAD_HANDLERS").values()
