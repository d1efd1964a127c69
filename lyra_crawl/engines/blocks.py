"""Tell a block page (CAPTCHA, JS wall, geo-block, 403/429, soft block) from a page of results.

Pure. Markers come from the engine's `blocks` in search_parsers.yaml; a page with none of them
and no results is still a CAPTCHA when it holds a challenge (CHALLENGE_ELEMENTS); a soft block
is a page that repeats the previous page of the same source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from parsel import Selector

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Outcome, ParseResult

# Statuses that are blocks whatever the engine's markers say.
STATUS_BLOCKS = {429: Outcome.RATE_LIMITED}
# What a challenge page holds, whatever its engine: a CAPTCHA or proof-of-work widget, a form
# posting to a challenge, the script or frame that runs one (reCAPTCHA, hCaptcha, Turnstile,
# ALTCHA, an engine's own: Google's captcha-form, DuckDuckGo's challenge-form, Mojeek's
# captcha-wrap, Brave's captcha card). Only a page without results is looked at: a results page
# may load such a script for a form of its own.
CHALLENGE_ELEMENTS = (
    ("a challenge form", "//form[contains(@action, 'captcha') or contains(@action, 'challenge')]"),
    (
        "a CAPTCHA element",
        "//*[contains(@id, 'captcha') or contains(@class, 'captcha')"
        " or contains(@id, 'challenge-form') or contains(@class, 'cf-turnstile')]",
    ),
    (
        "a challenge script",
        "//script[contains(@src, 'captcha') or contains(@src, 'challenge')"
        " or contains(@src, 'turnstile') or contains(@src, 'altcha')]",
    ),
    ("a challenge frame", "//iframe[contains(@src, 'captcha') or contains(@src, 'challenge')]"),
    ("an ALTCHA widget", "//altcha-widget"),
)


def detect_block(
    spec: EngineSpec,
    body: bytes,
    status: int,
    url: str,
    page: Selector | None = None,
) -> tuple[Outcome, str] | None:
    """The block this response is, with the marker that matched, or None.

    `page` is the HTML page the XPath markers run on (None for API engines and empty bodies).
    """
    for rule in spec.blocks:
        # Body text decides alone, whatever the status: a block page saved to a file or served
        # as 200 by a proxy says what it is all the same.
        marker = found_marker(body, page, rule.body_contains, rule.xpath)
        if marker:
            return rule.kind, marker
    return answer_block(spec, status, url)


def challenge_element(page: Selector | None) -> str:
    """The challenge the page holds (CHALLENGE_ELEMENTS), said for a detail; '' when none."""
    if page is None:
        return ""
    for name, xpath in CHALLENGE_ELEMENTS:
        found = page.xpath(xpath)
        if found:
            attributes = found[0].root.attrib
            named = " ".join(
                f"{key}={attributes[key][:60]!r}"
                for key in ("id", "class", "action", "src")
                if key in attributes
            )
            return f"{name}, <{found[0].root.tag} {named}>" if named else name
    return ""


def answer_block(spec: EngineSpec, status: int, url: str) -> tuple[Outcome, str] | None:
    """The block the response's status or final URL says, whatever its body holds."""
    for rule in spec.blocks:
        if status in rule.status and not rule.body_contains:
            return rule.kind, f"HTTP {status}"
        for part in rule.url_contains:
            if part in url:
                return rule.kind, f"redirected to {url}"
    if status in STATUS_BLOCKS:
        return STATUS_BLOCKS[status], f"HTTP {status}"
    return None


def found_marker(
    text: str | bytes, page: Selector | None, body_contains: Sequence[str], xpaths: Sequence[str]
) -> str:
    """Which of the markers the page holds, said for a detail; '' when none.

    `text` is the raw body (its bytes: decoding a large page costs more than the search) or
    text taken from the page; `xpaths` run on `page` only (None for API engines and empty
    bodies).
    """
    for marker in body_contains:
        if _contains(text, marker):
            return f"page contains {marker!r}"
    if page is not None:
        for xpath in xpaths:
            if page.xpath(xpath):
                return f"page matches {xpath!r}"
    return ""


@lru_cache(maxsize=256)
def _marker_words(marker: str, as_bytes: bool) -> tuple[str | bytes, ...]:
    return tuple(word.encode() if as_bytes else word for word in marker.split())


@lru_cache(maxsize=256)
def _marker_pattern(marker: str, as_bytes: bool) -> re.Pattern:
    # Saved and re-indented pages break sentences across lines: any whitespace run matches.
    pattern = r"\s+".join(re.escape(word) for word in marker.split())
    return re.compile(pattern.encode() if as_bytes else pattern)


def _contains(text: str | bytes, marker: str) -> bool:
    as_bytes = isinstance(text, bytes)
    words = _marker_words(marker, as_bytes)
    # A plain substring search per word is many times faster than the regex on a large page
    # and rules out nearly every page before the regex runs.
    if not all(word in text for word in words):
        return False
    return len(words) < 2 or _marker_pattern(marker, as_bytes).search(text) is not None


def repeated_page(previous_urls: Sequence[str] | None, result: ParseResult) -> ParseResult:
    """`result` as a soft block when it shows exactly the URLs of the page before it."""
    urls = [found.url for found in result.results]
    if not previous_urls or not urls or list(previous_urls) != urls:
        return result
    return ParseResult(
        outcome=Outcome.SOFT_BLOCK,
        detail="the engine answered with the previous page again",
        dropped=result.dropped,
    )
