"""html.duckduckgo.com/html: page 1 by GET, later pages by POSTing the "Next" form back."""

from __future__ import annotations

from html import escape
from urllib.parse import quote, urlencode

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import SimEngine, SimPage, html_page, int_param, token


def vqd_token(query: str) -> str:
    """DuckDuckGo's per-query token, stable for a query like the real one within a session."""
    return "4-" + str(int(token("vqd", query), 16))


class DuckDuckGoHtml(SimEngine):
    name = "duckduckgo"

    def page_number(self, params: dict[str, str]) -> int | None:
        if "s" not in params:
            return 1
        if params.get("vqd") != vqd_token(params.get("q", "")):
            return None  # the real endpoint answers a token-less POST with its home page
        offset = int_param(params, "s")
        return None if offset is None else offset // self.per_page + 1

    def refused(self) -> SimPage:
        return html_page(
            "DuckDuckGo",
            '<div id="content_homepage"><form id="search_form_homepage" action="/html/" '
            'method="post"><input type="text" name="q" autocomplete="off"></form></div>',
        )

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = []
        for result in results:
            href = escape("//duckduckgo.com/l/?" + urlencode({"uddg": result.url, "rut": "sim"}))
            rows.append(
                '<div class="result results_links results_links_deep web-result ">'
                '<div class="links_main links_deep result__body"><h2 class="result__title">'
                f'<a rel="nofollow" class="result__a" href="{href}">{escape(result.title)}</a></h2>'
                '<div class="result__extras"><div class="result__extras__url">'
                f'<a class="result__url" href="{href}">{escape(result.url)}</a></div></div>'
                f'<a class="result__snippet" href="{href}">{escape(result.snippet)}</a>'
                '<div class="clear"></div></div></div>'
            )
        ad = (
            '<div class="result results_links results_links_deep result--ad ">'
            '<div class="links_main links_deep result__body"><h2 class="result__title">'
            '<a class="result__a" href="https://duckduckgo.com/y.js?ad_provider=sim">'
            "Sponsored: buy now</a></h2></div></div>"
        )
        offset = page_number * self.per_page
        hidden = {
            "q": query,
            "s": offset,
            "nextParams": "",
            "v": "l",
            "o": "json",
            "dc": offset + 1,
            "api": "d.js",
            "vqd": vqd_token(query),
            "kl": "wt-wt",
        }
        next_form = (
            '<div class="nav-link"><form action="/html/" method="post">'
            '<input type="submit" class="btn btn--alt" value="Next" />'
            + "".join(
                f'<input type="hidden" name="{k}" value="{escape(str(v))}" />'
                for k, v in hidden.items()
            )
            + "</form></div>"
            if results
            else ""
        )
        body = "".join(rows) or '<div class="no-results">No results.</div>'
        return html_page(
            f"{query} at DuckDuckGo",
            '<form name="x" class="header__form" action="/html/" method="post">'
            f'<input name="q" type="text" value="{escape(query)}" /></form>'
            f'<div id="links" class="results">{ad if page_number == 1 else ""}{body}'
            f"{next_form}</div>",
        )

    def captcha_page(self, query: str) -> SimPage:
        return html_page(
            "DuckDuckGo",
            f'<form id="challenge-form" method="POST" action="//duckduckgo.com/anomaly.js?q='
            f'{quote(query)}"><div class="anomaly-modal__mask"><div class="anomaly-modal__modal">'
            '<div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>'
            "<div>Please complete the following challenge.</div></div></div></form>",
        )
