"""Result pages rendered in headless Chromium through scrapy-playwright, one tab at a time.

Engines with `render: browser` in search_parsers.yaml get `playwright=True` in their request meta;
every other request of the same crawl goes through Scrapy's own HTTP handler. A rendered page is
still an ordinary Scrapy request: it passes the whole downloader middleware chain with the same
meta (lyra_engine, download_slot, …), so pacing, quotas and the circuit breaker apply to it as to
any page, and its rendered HTML goes to the same parser (a JS wall or CAPTCHA is the same block).

Settings: LYRA_BROWSER_ENABLED (off: browser engines go over plain HTTP and the crawl never loads
Playwright), LYRA_CHROMIUM_PATH, and the PLAYWRIGHT_* settings in settings.py. The download
handler is installed only for crawls that may render a page, and Chromium starts with the first
rendered page, so other crawls never launch it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from scrapy.settings import BaseSettings
from scrapy_playwright.page import PageMethod

from lyra_crawl.config import EngineSpec, LyraConfig, NoResultsMarkers
from lyra_crawl.engines.routing import route_to_simulator
from lyra_crawl.query.arguments import usable_engines

PLAYWRIGHT_HANDLER = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
# How long, from navigation start, a page has to show a result or a block marker.
RESULT_WAIT_MS = 10_000
POLL_MS = 100

# True once the page shows a result or any block marker of the engine (an XPath match, a text in
# the HTML, a part of the URL), or once RESULT_WAIT_MS has passed: a page showing neither (an
# empty result page) still goes to the parser, which tells empty from blocked.
WAIT_SCRIPT = """
({xpaths, texts, urlParts, deadlineMs}) => {
  const found = (xpath) => {
    try {
      return document.evaluate(
        xpath, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null
      ).singleNodeValue !== null;
    } catch (error) {
      return false;  // an XPath only lxml understands: the parser still applies it
    }
  };
  const html = document.documentElement ? document.documentElement.outerHTML : "";
  return xpaths.some(found)
    || texts.some((text) => html.includes(text))
    || urlParts.some((part) => location.href.includes(part))
    || performance.now() > deadlineMs;
}
"""


def render_schemes(config: LyraConfig, engine: str | None, simulator_url: str | None) -> set[str]:
    """URL schemes of the pages a crawl on `engine` may render (None: any usable engine).

    Empty when the crawl renders nothing. Each scheme given to scrapy-playwright starts a
    Playwright driver of its own, so only these get it.
    """
    names = [engine] if engine else usable_engines(config)
    return {
        urlsplit(route_to_simulator(config.engine(name).url, name, simulator_url)).scheme
        for name in names
        if config.engine(name).render == "browser"
    }


def install_browser(settings: BaseSettings, schemes: set[str]) -> None:
    """Route `schemes` through scrapy-playwright and hand it LYRA_CHROMIUM_PATH.

    The handler passes requests without `playwright` meta to Scrapy's own HTTP/1.1 handler.
    """
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    handlers.update(dict.fromkeys(schemes, PLAYWRIGHT_HANDLER))
    settings.set("DOWNLOAD_HANDLERS", handlers, priority="spider")
    chromium = settings.get("LYRA_CHROMIUM_PATH")
    if chromium:
        options = {**settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS"), "executable_path": chromium}
        settings.set("PLAYWRIGHT_LAUNCH_OPTIONS", options, priority="spider")


def wait_markers(spec: EngineSpec) -> dict[str, Any]:
    """The engine's result XPaths, no-results and block markers, as WAIT_SCRIPT's argument."""
    blocks = spec.blocks
    empty = spec.no_results or NoResultsMarkers()
    return {
        "xpaths": [
            *(xpath for layout in spec.parse for xpath in layout.results),
            *empty.xpath,
            *(x for b in blocks for x in b.xpath),
        ],
        "texts": [
            *empty.body_contains,
            *(text for block in blocks for text in block.body_contains),
        ],
        "urlParts": [part for block in blocks for part in block.url_contains],
        "deadlineMs": RESULT_WAIT_MS,
    }


def browser_meta(spec: EngineSpec) -> dict[str, Any]:
    """Request meta that renders `spec`'s page in Chromium and waits for results or a block."""
    wait = PageMethod(
        "wait_for_function",
        WAIT_SCRIPT,
        arg=wait_markers(spec),
        polling=POLL_MS,
        # Only a page whose scripts never let the check run gets here: that is a failed fetch.
        timeout=2 * RESULT_WAIT_MS,
    )
    return {"playwright": True, "playwright_page_methods": [wait]}
