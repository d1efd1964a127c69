"""Which Chromium scrapy-playwright launches, and which of a page's sub-requests it skips.

Loaded by scrapy-playwright itself (PLAYWRIGHT_BROWSER_PROVIDER, PLAYWRIGHT_ABORT_REQUEST in
settings.py), so only crawls that render pages import Playwright. The binary is LYRA_CHROMIUM_PATH
when set (it reaches here as PLAYWRIGHT_LAUNCH_OPTIONS["executable_path"]); otherwise Playwright's
own Chromium when `playwright install chromium` has put it in place; otherwise Debian's package.
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.async_api import Browser
from playwright.async_api import Request as PlaywrightRequest
from scrapy_playwright.provider import PlaywrightBrowserProvider

DEBIAN_CHROMIUM = "/usr/bin/chromium"
# A result page's text and links are all the parser reads; these only cost time and traffic.
UNNEEDED_RESOURCES = frozenset({"image", "font", "media"})


class ChromiumNotFound(RuntimeError):
    """No Chromium binary where the settings point; the message says how to get one."""


def chromium_executable(configured: str | None, playwright_own: str) -> str:
    """The Chromium to launch: `configured`, else Playwright's own if installed, else Debian's."""
    if configured:
        path, origin = configured, "LYRA_CHROMIUM_PATH"
    elif Path(playwright_own).is_file():
        return playwright_own
    else:
        path, origin = DEBIAN_CHROMIUM, "the default"
    if not (Path(path).is_file() and os.access(path, os.X_OK)):
        raise ChromiumNotFound(
            f"Chromium not found at {path} ({origin}): install Debian's package "
            "(apt-get install -y chromium, or `make test`), run `playwright install chromium`, "
            "or point LYRA_CHROMIUM_PATH at a Chromium binary"
        )
    return path


class ChromiumProvider(PlaywrightBrowserProvider):
    """scrapy-playwright's own provider, launching the Chromium that chromium_executable picks.

    Playwright's driver starts with the first page to render, not with the crawl: a batch whose
    engines might render (any engine may be chosen) starts no driver unless one does.
    """

    async def start(self) -> None:
        pass  # see launch_browser

    async def launch_browser(self) -> Browser:
        if self.browser_type is None:
            await super().start()
        assert self.browser_type is not None
        options = self.config.launch_options
        options["executable_path"] = chromium_executable(
            options.get("executable_path"), self.browser_type.executable_path
        )
        return await super().launch_browser()


def abort_unneeded(request: PlaywrightRequest) -> bool:
    """PLAYWRIGHT_ABORT_REQUEST: skip images, fonts and media."""
    return request.resource_type in UNNEEDED_RESOURCES
