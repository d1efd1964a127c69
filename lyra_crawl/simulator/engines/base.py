"""What every simulated engine is: which page a request asks for, and the pages it answers with."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from html import escape

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.layouts import changed_document, result_xpaths


@dataclass(frozen=True)
class SimPage:
    status: int
    # Text is sent as UTF-8; bytes (a captured real page) as they are, in the charset they say.
    body: str | bytes
    content_type: str = "text/html; charset=utf-8"
    # A Location starting with "/" is the engine's own path; the server adds the engine prefix.
    headers: tuple[tuple[str, str], ...] = ()


def token(*parts: str) -> str:
    """A stable opaque token (DuckDuckGo's vqd, Startpage's sc) for the given parts."""
    return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()[:14]


def html_page(title: str, body: str, status: int = 200) -> SimPage:
    return SimPage(
        status=status,
        body=f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"</head><body>{body}</body></html>",
    )


def json_page(body: str, status: int = 200) -> SimPage:
    return SimPage(status=status, body=body, content_type="application/json; charset=utf-8")


def redirect(location: str) -> SimPage:
    return SimPage(
        status=302, body="", content_type="text/plain", headers=(("Location", location),)
    )


def int_param(params: dict[str, str], name: str) -> int | None:
    """The whole-number parameter `name`, None when it is absent or not a number."""
    value = params.get(name, "")
    return int(value) if value.isdigit() else None


class SimEngine:
    """One engine: which page a request asks for, and the pages it answers with."""

    name = ""
    per_page = 10
    query_param = "q"

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        """A page that is not a result page (a home page with a token, a follow-up answer)."""
        return None

    def page_number(self, params: dict[str, str]) -> int | None:
        """The page asked for, or None when the request is not one the engine accepts."""
        raise NotImplementedError

    def query(self, params: dict[str, str]) -> str:
        return params.get(self.query_param, "")

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        raise NotImplementedError

    def changed_layout_page(
        self, query: str, page_number: int, results: list[SimResult]
    ) -> SimPage:
        """The results page in a layout no parse rule reads (lyra_crawl.simulator.layouts)."""
        page = self.results_page(query, page_number, results)
        return replace(page, body=changed_document(page.body, result_xpaths(self.name)))

    def captcha_page(self, query: str) -> SimPage:
        raise NotImplementedError

    def lagged_page(self, params: dict[str, str], lag_s: int) -> SimPage | None:
        """The answer while the engine's database replicas lag `lag_s` seconds, when the
        request asked not to be served then (only MediaWiki's APIs know that: `maxlag`)."""
        return None

    def refused(self) -> SimPage:
        """The answer to a request the engine does not accept (page_number gave None)."""
        return SimPage(400, "bad request", "text/plain")


class OffsetPaged(SimEngine):
    """Engines whose page is an offset or index parameter, absent or at its base on page 1."""

    page_param = ""
    # value of page_param for page N: step * (N - 1) + base
    step = 10
    base = 0

    def page_number(self, params: dict[str, str]) -> int | None:
        if self.page_param not in params:
            return 1
        value = int_param(params, self.page_param)
        if value is None or value < self.base:
            return None
        return (value - self.base) // self.step + 1
