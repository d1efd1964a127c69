"""HTML result pages of the formula-paged engines, each in its real engine's markup shape.

Google, Bing, Mojeek, Brave, Ecosia and Marginalia: our own templates with the elements, ids and
classes the parsers rely on, an ad or widget where the real page has one, and the real paging
parameter.
"""

from __future__ import annotations

import base64
import json
from html import escape
from urllib.parse import quote, urlencode, urlsplit

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import OffsetPaged, SimPage, html_page, redirect
from lyra_crawl.simulator.layouts import changed_fragment, result_xpaths


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


# Where the simulator's "People also ask" answers lead: never a result of the corpus.
PAA_ANSWER_URL = "https://answers.example.org/paa"


class Google(OffsetPaged):
    """www.google.com/search: `start` = (N-1)*10, absent on page 1.

    With `javascript` on, results reach the page only through a script (as on the real page
    today): a plain HTTP client sees the "enable JavaScript" interstitial, a browser the results.
    The logo is an image a browser would fetch from the simulator (so aborting it shows).
    """

    name = "google"
    page_param = "start"

    def __init__(self, javascript: bool = True) -> None:
        self.javascript = javascript

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        if not path.startswith("/sorry/"):
            return None
        return html_page(
            "https://www.google.com/search",
            '<form id="captcha-form" action="index" method="post">'
            '<div id="recaptcha" class="g-recaptcha" data-sitekey="sim"></div></form>'
            "<div>Our systems have detected unusual traffic from your computer network.</div>",
            status=429,
        )

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        return self._page(query, self._main(query, page_number, results))

    def changed_layout_page(
        self, query: str, page_number: int, results: list[SimResult]
    ) -> SimPage:
        # Renamed before the script takes the markup in, so a browser renders the new layout.
        main = changed_fragment(self._main(query, page_number, results), result_xpaths(self.name))
        return self._page(query, main)

    def _main(self, query: str, page_number: int, results: list[SimResult]) -> str:
        """The page's main column: results (or the no-results card), the ad and the pager."""
        rows = [
            f'<div class="MjjYud"><div class="g tF2Cxc" data-hveid="CA{i}"><div class="yuRUbf">'
            f'<a href="{escape(r.url)}"><h3 class="LC20lb">{escape(r.title)}</h3>'
            f"<cite>{escape(_host(r.url))}</cite></a></div>"
            f'<div class="VwiC3b">{escape(r.snippet)}</div></div></div>'
            for i, r in enumerate(results)
        ]
        ad = (
            '<div id="tvcap"><div id="tads"><div class="uEierd">'
            '<a href="https://www.googleadservices.com/pagead/aclk?sa=sim">'
            "<h3>Sponsored: best deals</h3></a></div></div></div>"
        )
        # "People also ask" among the results, its first answer expanded: a title link like a
        # result's, inside #rso, after the question's toggle (as on the real pages, 2019-2026).
        question = f"What is {escape(query)}?"
        asked = (
            '<div class="MjjYud"><div class="cUnQKe"><div class="eJH8qe"><div class="T6zPgb">'
            '<div role="heading" aria-level="2">People also ask</div></div></div>'
            f'<div jsname="N760b"><div class="related-question-pair" data-q="{question}">'
            f'<div><div role="button" aria-expanded="true">{question}</div></div>'
            '<div><div class="g"><div class="yuRUbf">'
            f'<a href="{PAA_ANSWER_URL}?q={quote(query)}"><h3>{question} An answer</h3></a>'
            "</div></div></div></div></div></div></div>"
        )
        following = urlencode({"q": query, "start": page_number * self.step})
        pager = (
            f'<div id="botstuff"><div id="navcnt"><table><tr><td class="cur">{page_number}</td>'
            f'<td><a href="/search?{following}"><h3>More results</h3></a></td></tr></table>'
            "</div></div>"
        )
        nothing = (
            f'<div id="topstuff"><div class="card-section"><p>Your search - <b>{escape(query)}'
            "</b> - did not match any documents.</p></div></div>"
        )
        return (
            f'<div id="main"><div id="center_col">{ad if results else nothing}<div id="search">'
            f'<div id="rso">{"".join([*rows[:3], asked, *rows[3:]]) if rows else ""}</div>'
            f"</div>{pager if results else ''}</div></div>"
        )

    def _page(self, query: str, main: str) -> SimPage:
        if self.javascript:
            main = (
                '<noscript><meta content="0;url=/httpservice/retry/enablejs?sei=sim" '
                'http-equiv="refresh"></noscript><div id="app"></div><script>'
                f"document.getElementById('app').innerHTML = {json.dumps(main)};</script>"
            )
        logo = '<img id="logo" src="/images/branding/googlelogo_sim.png" alt="Google">'
        return html_page(f"{query} - Google Search", logo + main)

    def captcha_page(self, query: str) -> SimPage:
        return redirect("/sorry/index?" + urlencode({"continue": f"/search?q={query}"}))


def bing_link(url: str) -> str:
    """Bing's click-tracking link: `u` is "a1" + the target in unpadded URL-safe base64."""
    encoded = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    return "https://www.bing.com/ck/a?!&&" + urlencode({"p": "sim", "u": f"a1{encoded}", "ntb": 1})


class Bing(OffsetPaged):
    """www.bing.com/search: `first` = (N-1)*10+1."""

    name = "bing"
    page_param = "first"
    base = 1

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = "".join(
            f'<li class="b_algo"><h2><a href="{escape(bing_link(r.url))}">{escape(r.title)}</a>'
            f'</h2><div class="b_caption"><p>{escape(r.snippet)}</p></div></li>'
            for r in results
        )
        ad = (
            '<li class="b_ad"><ul><li><h2><a href="https://www.bing.com/aclick?ld=sim">'
            "Sponsored: shop now</a></h2></li></ul></li>"
        )
        following = urlencode({"q": query, "first": page_number * self.step + self.base})
        pager = (
            f'<li class="b_pag"><nav><ul><li><a class="sb_pagS sb_pagS_bp b_widePag sb_bp" '
            f'aria-label="Page {page_number}">{page_number}</a></li>'
            f'<li><a href="/search?{following}">{page_number + 1}</a></li></ul></nav></li>'
        )
        content = (
            f"{ad}{rows}{pager}"
            if results
            else '<li class="b_no"><h1>There are no results for this question.</h1></li>'
        )
        return html_page(f"{query} - Search", f'<ol id="b_results">{content}</ol>')

    def captcha_page(self, query: str) -> SimPage:
        return html_page(
            f"{query} - Search",
            "<h1>One last step</h1><p>Please solve the challenge below to continue</p>",
        )


class Mojeek(OffsetPaged):
    """www.mojeek.com/search: `s` = (N-1)*10+1, absent on page 1."""

    name = "mojeek"
    page_param = "s"
    base = 1

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
            f'<li><a href="/search?{urlencode({"q": query, "s": (n - 1) * self.step + 1})}">'
            f"{n}</a></li>"
            for n in range(page_number + 1, page_number + 4)
        )
        content = (
            f'<ul class="results-standard">{items}</ul>'
            f'<div class="pagination"><ul>{links}</ul></div>'
            if results
            else '<div class="no-results"><p>No pages found matching your query.</p></div>'
        )
        return html_page(f"{query} - Mojeek Search", content)

    def captcha_page(self, query: str) -> SimPage:
        return html_page(
            "403 - Forbidden",
            "<h1>Sorry, your network appears to be sending automated queries</h1>",
            status=403,
        )


class Brave(OffsetPaged):
    """search.brave.com/search: `offset` = page index (0, 1, 2, …), absent on page 1."""

    name = "brave"
    per_page = 20
    page_param = "offset"
    step = 1

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = "".join(
            f'<div class="snippet svelte-sim" data-pos="{i}" data-type="web" data-keynav="true">'
            f'<div class="result-wrapper"><div class="result-content">'
            f'<a href="{escape(r.url)}" target="_self" class="l1"><div class="site-name-wrapper">'
            f'<cite class="snippet-url">{escape(_host(r.url))}</cite></div>'
            f'<div class="title search-snippet-title" title="{escape(r.title)}">'
            f"{escape(r.title)}</div></a>"
            f'<div class="generic-snippet"><div class="content">{escape(r.snippet)}</div></div>'
            "</div></div></div>"
            for i, r in enumerate(results)
        )
        videos = (
            '<div class="snippet" data-type="videos"><a href="https://www.youtube.com/watch?v=sim">'
            '<div class="title">Videos</div></a></div>'
        )
        nothing = (
            '<div class="no-results"><h2>Not many great matches came back for your search</h2>'
            "</div>"
        )
        return html_page(
            f"{query} - Brave Search",
            f'<div id="results">{rows}{videos if rows else nothing}</div>',
        )

    def captcha_page(self, query: str) -> SimPage:
        # Brave's 2026 challenge page as a headless Chrome saved it, with 200: the app's shell,
        # its noscript sentence and its route in the page's data (config/search_parsers.yaml).
        return html_page(
            "Captcha - Brave Search",
            '<div id="main"><noscript><h5>This page needs JavaScript to function.</h5>'
            " Your request has been flagged as being suspicious and Brave Search decided to"
            " schedule a captcha for you.</noscript></div>"
            '<script>kit.start(app, element, {data: [{type:"data",data:{page:"/captcha/slider",'
            'searchPage:"/search",query:void 0}}]});</script>',
        )


class Ecosia(OffsetPaged):
    """www.ecosia.org/search: `p` = N-1, absent on page 1."""

    name = "ecosia"
    page_param = "p"
    step = 1

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = "".join(
            '<div data-test-id="mainline-result-web" class="mainline__result-wrapper">'
            '<article data-test-id="organic-result" class="result web-result mainline__result">'
            f'<div class="result__header"><a data-test-id="result-link" href="{escape(r.url)}" '
            f'class="result-info__link">{escape(_host(r.url))}</a></div>'
            f'<a data-test-id="result-link" href="{escape(r.url)}" class="result__link">'
            f'<h2 data-test-id="result-title" class="result-title">{escape(r.title)}</h2></a>'
            f'<div data-test-id="result-description"><p data-test-id="web-result-description">'
            f"{escape(r.snippet)}</p></div></article></div>"
            for r in results
        )
        ad = (
            '<div data-test-id="mainline-result-ad" class="mainline__result-wrapper">'
            '<div data-test-id="ad-google"><article class="ad-result"><a href="https://ad.sim/">'
            "<h2>Sponsored</h2></a></article></div></div>"
        )
        nothing = (
            '<div data-test-id="web-no-results"><p>Unfortunately we didn’t find any results for '
            f"<b>{escape(query)}</b></p></div>"
        )
        return html_page(
            f"{query} - Ecosia", f'<div class="mainline">{ad + rows if rows else nothing}</div>'
        )

    def captcha_page(self, query: str) -> SimPage:
        return redirect("/captcha?" + urlencode({"q": query}))

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        if path != "/captcha":
            return None
        return html_page("Ecosia", '<div class="h-captcha" data-sitekey="sim"></div>')


class Marginalia(OffsetPaged):
    """search.marginalia.nu/search: `page` = N, absent on page 1."""

    name = "marginalia"
    per_page = 20
    page_param = "page"
    step = 1
    base = 1
    query_param = "query"

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        rows = "".join(
            f'<section class="card search-result"><h2><a class="title" href="{escape(r.url)}">'
            f'{escape(r.title)}</a></h2><div class="url">{escape(r.url)}</div>'
            f'<p class="description">{escape(r.snippet)}</p></section>'
            for r in results
        )
        following = f"/search?query={quote(query)}&page={page_number + 1}"
        nothing = "<h2>No search results found</h2>"
        return html_page(
            f"Marginalia Search - {query}",
            f'<div class="results">{rows or nothing}</div>'
            f'<nav><a href="{escape(following)}">Next</a></nav>',
        )

    def captcha_page(self, query: str) -> SimPage:
        return html_page("Marginalia Search", "<h1>Service overloaded</h1>", status=503)
