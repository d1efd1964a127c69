"""How each simulated engine reads a request and renders a page, in the real engine's shape.

The markup follows the structure of the real pages (our own templates, not copies): the same
element and class names the parsers rely on, the same paging parameters and token hand-offs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from html import escape
from urllib.parse import quote, urlencode

from lyra_crawl.simulator.corpus import SimResult


@dataclass(frozen=True)
class SimPage:
    status: int
    body: str
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def vqd_token(query: str) -> str:
    """DuckDuckGo's per-query token, stable for a query like the real one within a session."""
    return "4-" + str(int(hashlib.sha256(query.encode("utf-8")).hexdigest()[:24], 16))


class SimEngine:
    """One engine: which page a request asks for, and the pages it answers with."""

    name = ""
    per_page = 10

    def page_number(self, params: dict[str, str]) -> int | None:
        """The page asked for, or None when the request is not one the engine accepts."""
        raise NotImplementedError

    def query(self, params: dict[str, str]) -> str:
        return params.get("q", "")

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        raise NotImplementedError

    def captcha_page(self, query: str) -> SimPage:
        raise NotImplementedError


def _page(body: str, status: int = 200) -> SimPage:
    return SimPage(
        status=status, body=f'<!DOCTYPE html>\n<html><head><meta charset="utf-8">{body}</html>'
    )


class DuckDuckGoHtml(SimEngine):
    """html.duckduckgo.com/html: page 1 by GET, later pages by POSTing the "Next" form back."""

    name = "duckduckgo"

    def page_number(self, params: dict[str, str]) -> int | None:
        if "s" not in params:
            return 1
        if params.get("vqd") != vqd_token(params.get("q", "")):
            return None  # the real endpoint answers a token-less POST with its home page
        try:
            return int(params["s"]) // self.per_page + 1
        except ValueError:
            return None

    def home_page(self) -> SimPage:
        return _page(
            '<title>DuckDuckGo</title></head><body><div id="content_homepage">'
            '<form id="search_form_homepage" action="/html/" method="post">'
            '<input type="text" name="q" autocomplete="off"></form></div></body>'
        )

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = []
        for result in results:
            href = "//duckduckgo.com/l/?" + urlencode({"uddg": result.url, "rut": "sim"})
            rows.append(
                '<div class="result results_links results_links_deep web-result ">'
                '<div class="links_main links_deep result__body">'
                '<h2 class="result__title">'
                f'<a rel="nofollow" class="result__a" href="{escape(href)}">'
                f"{escape(result.title)}</a></h2>"
                '<div class="result__extras"><div class="result__extras__url">'
                f'<a class="result__url" href="{escape(href)}">{escape(result.url)}</a></div></div>'
                f'<a class="result__snippet" href="{escape(href)}">{escape(result.snippet)}</a>'
                '<div class="clear"></div></div></div>'
            )
        ad = (
            '<div class="result results_links results_links_deep result--ad ">'
            '<div class="links_main links_deep result__body"><h2 class="result__title">'
            '<a class="result__a" href="https://duckduckgo.com/y.js?ad_provider=sim">'
            "Sponsored: buy now</a></h2></div></div>"
        )
        offset = page_number * self.per_page
        next_form = (
            '<div class="nav-link"><form action="/html/" method="post">'
            '<input type="submit" class="btn btn--alt" value="Next" />'
            f'<input type="hidden" name="q" value="{escape(query)}" />'
            f'<input type="hidden" name="s" value="{offset}" />'
            '<input type="hidden" name="nextParams" value="" />'
            '<input type="hidden" name="v" value="l" />'
            '<input type="hidden" name="o" value="json" />'
            f'<input type="hidden" name="dc" value="{offset + 1}" />'
            '<input type="hidden" name="api" value="d.js" />'
            f'<input type="hidden" name="vqd" value="{vqd_token(query)}" />'
            '<input name="kl" value="wt-wt" type="hidden" /></form></div>'
            if results
            else ""
        )
        body = "".join(rows) or '<div class="no-results">No results.</div>'
        return _page(
            f"<title>{escape(query)} at DuckDuckGo</title></head><body>"
            '<form name="x" class="header__form" action="/html/" method="post">'
            f'<input name="q" type="text" value="{escape(query)}" /></form>'
            f'<div id="links" class="results">{ad if page_number == 1 else ""}{body}'
            f"{next_form}</div></body>"
        )

    def captcha_page(self, query: str) -> SimPage:
        return _page(
            "<title>DuckDuckGo</title></head><body>"
            '<form id="challenge-form" method="POST" '
            f'action="//duckduckgo.com/anomaly.js?q={quote(query)}">'
            '<div class="anomaly-modal__mask"><div class="anomaly-modal__modal">'
            '<div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>'
            "<div>Please complete the following challenge.</div></div></div></form></body>"
        )


class Mojeek(SimEngine):
    """www.mojeek.com/search: `s` = (N-1)*10+1, absent on page 1."""

    name = "mojeek"

    def page_number(self, params: dict[str, str]) -> int | None:
        if "s" not in params:
            return 1
        try:
            return (int(params["s"]) - 1) // self.per_page + 1
        except ValueError:
            return None

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        items = "".join(
            f'<li class="r{i}"><a title="{escape(r.url)}" href="{escape(r.url)}" class="ob">'
            f'<p class="i"><span class="url">{escape(r.url)}</span></p></a>'
            f'<h2><a class="title" title="{escape(r.url)}" href="{escape(r.url)}">'
            f"{escape(r.title)}</a></h2>"
            f'<p class="s">{escape(r.snippet)}</p></li>'
            for i, r in enumerate(results, start=1)
        )
        links = "".join(
            f'<li><a href="/search?{urlencode({"q": query, "s": (n - 1) * self.per_page + 1})}">'
            f"{n}</a></li>"
            for n in range(page_number + 1, page_number + 4)
        )
        content = (
            f'<ul class="results-standard">{items}</ul>'
            f'<div class="pagination"><ul>{links}</ul></div>'
            if results
            else '<div class="no-results"><p>No pages found matching your query.</p></div>'
        )
        return _page(f"<title>{escape(query)} - Mojeek Search</title></head><body>{content}</body>")

    def captcha_page(self, query: str) -> SimPage:
        return _page(
            "<title>403 - Forbidden</title></head><body><h1>Sorry, your network appears to be "
            "sending automated queries</h1></body>",
            status=403,
        )


ENGINES: dict[str, SimEngine] = {engine.name: engine for engine in (DuckDuckGoHtml(), Mojeek())}
