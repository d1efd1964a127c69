"""www.startpage.com: the home page's form hands an `sc` token to every search POST.

A search without the right sc is redirected to /sp/captcha, as the real engine does with a
made-up one. Each results page carries pager forms (page=2, 3, …) with the sc again.
"""

from __future__ import annotations

from html import escape

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import (
    SimEngine,
    SimPage,
    html_page,
    int_param,
    redirect,
    token,
)

SC = token("startpage", "sc")


def _hidden(fields: dict[str, object]) -> str:
    return "".join(
        f'<input type="hidden" name="{k}" value="{escape(str(v))}">' for k, v in fields.items()
    )


class Startpage(SimEngine):
    name = "startpage"
    query_param = "query"

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        if path == "/":
            return html_page(
                "Startpage - Private Search Engine",
                '<form id="search" action="/sp/search" method="post">'
                '<input type="text" name="query" value="">'
                + _hidden({"cat": "web", "sc": SC, "t": "device"})
                + "</form>",
            )
        if path.startswith("/sp/captcha"):
            return html_page("Startpage", '<div class="captcha">Please confirm you are human</div>')
        return None

    def page_number(self, params: dict[str, str]) -> int | None:
        if params.get("sc") != SC:
            return None
        if "page" not in params:
            return 1
        return int_param(params, "page")

    def refused(self) -> SimPage:
        return self.captcha_page("")

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = "".join(
            f'<div class="result css-sim"><div class="upper"><a class="wgl-site-title" '
            f'href="{escape(r.url)}"><span class="link-text">{escape(r.url)}</span></a></div>'
            f'<a class="result-title result-link css-sim" href="{escape(r.url)}">'
            f'<h2 class="wgl-title">{escape(r.title)}</h2></a>'
            f'<p class="description css-sim">{escape(r.snippet)}</p></div>'
            for r in results
        )
        base = {"query": query, "cat": "web", "sc": SC, "t": "device"}
        pager = "".join(
            f'<form action="/sp/search" method="post">{_hidden({**base, "page": n})}'
            f'<button type="submit">{n}</button></form>'
            for n in range(max(1, page_number - 2), page_number + 3)
        )
        nothing = f"<p>Your search for <b>{escape(query)}</b> did not match any results.</p>"
        return html_page(
            "Startpage Search Results",
            f'<div class="w-gl"><span class="w-gl-attribution">Web results</span>{rows or nothing}'
            f'</div><div class="pagination">{pager if rows else ""}</div>',
        )

    def captcha_page(self, query: str) -> SimPage:
        return redirect("/sp/captcha")
