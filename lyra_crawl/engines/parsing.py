"""Parse one fetched page into results plus its outcome: the single entry point. Pure.

HTML engines are read by their XPath rules (html.py); API engines by the module their spec's
`parser` names. Either way the outcome is decided here. An API answer: block markers, HTTP
errors, error documents, a page number other than the one asked for, then results or empty.
An HTML page: HTTP errors, then its results, which only its status or a block URL overrule (a
snippet may quote a block page's words); a page without results is a block by its markers,
else the engine's no-results page (empty), else a CAPTCHA when it holds a challenge (a widget,
a challenge form or script: blocks.CHALLENGE_ELEMENTS), else layout_changed.
Every result is vetted here too, whatever family found it: one that is no web URL, has no
title, or whose URL or title is too long to be real is dropped and counted by reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from parsel import Selector

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines import (
    arxiv,
    crossref,
    html,
    mediawiki,
    openalex,
    pubmed,
    qwant,
    semantic_scholar,
)
from lyra_crawl.engines.base import Extracted, Outcome, ParseResult, SerpResult
from lyra_crawl.engines.blocks import (
    answer_block,
    challenge_element,
    detect_block,
    found_marker,
)
from lyra_crawl.engines.request import ensure_engine_host
from lyra_crawl.engines.urls import is_web_url

Extractor = Callable[[EngineSpec, bytes, int, str], Extracted]
# One entry per name in config.PARSER_HOOKS (tests/test_conformance.py checks they agree).
HOOKS: dict[str, Extractor] = {
    "qwant": qwant.extract,
    "wikipedia": mediawiki.wikipedia,
    "wikidata": mediawiki.wikidata,
    "arxiv": arxiv.extract,
    "pubmed": pubmed.extract,
    "semantic_scholar": semantic_scholar.extract,
    "openalex": openalex.extract,
    "crossref": crossref.extract,
}
# Beyond these a title or URL is junk, not a result (the longest real ones are a few hundred).
MAX_TITLE_CHARS = 1_000
MAX_URL_CHARS = 8_192
# What a hook meets when a document has another shape than the one it reads (a list where an
# object was due, a number for a string): the page is an error, never a crash.
SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


def parse_page(
    spec: EngineSpec, body: bytes, page_number: int, *, status: int = 200, url: str = ""
) -> ParseResult:
    """Turn one fetched page into results plus its outcome."""
    if spec.family == "html":
        return _parse_html(spec, body, page_number, status, url)
    block = detect_block(spec, body, status, url)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    try:
        found = HOOKS[spec.parser or ""](spec, body, page_number, url)
    except SHAPE_ERRORS as exc:
        detail = f"{spec.name} answered in a shape its parser does not read ({exc!r:.200})"
        return ParseResult(outcome=Outcome.LAYOUT_CHANGED, detail=detail)
    if status >= 400:
        # An API's error document says more than its status; results never count.
        detail = f"HTTP {status}: {found.error}" if found.error else f"HTTP {status}"
        return ParseResult(outcome=Outcome.ERROR, detail=detail)
    return _judge(spec, found, page_number)


def _parse_html(
    spec: EngineSpec, body: bytes, page_number: int, status: int, url: str
) -> ParseResult:
    """An HTML page, read from the engine's results region when that holds results.

    Only results are taken from the region: any other outcome is decided on the whole page,
    so a block, the engine's no-results page or a changed layout reads as without it.
    """
    if status >= 400:
        return _without_page(spec, body, status, url, html.page_selector(body))
    region = html.results_region(spec, body)
    page = html.page_selector(region, html.page_encoding(body)) if region else None
    found = html.extract(spec, page, page_number) if page is not None else None
    result = _judge(spec, found, page_number) if found is not None else None
    if result is None or result.outcome is not Outcome.OK:
        page = html.page_selector(body)
        if page is None:
            return _without_page(spec, body, status, url, page)
        found = html.extract(spec, page, page_number)
        result = _judge(spec, found, page_number)
    if result.outcome is Outcome.OK:
        # Results in the engine's own containers are the engine answering: block text among
        # them is a snippet about CAPTCHAs, not a CAPTCHA. Only the status or URL still decide.
        block = answer_block(spec, status, url)
    else:
        block = detect_block(spec, body, status, url, page)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    if result.outcome is Outcome.EMPTY:
        return _without_results(spec, page, found, result)
    return result


def _without_page(
    spec: EngineSpec, body: bytes, status: int, url: str, page: Selector | None
) -> ParseResult:
    """An HTTP error or an empty body: a block when its markers, status, URL or a challenge
    on it say so."""
    block = detect_block(spec, body, status, url, page)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    challenge = challenge_element(page)
    if challenge:
        return ParseResult(
            outcome=Outcome.CAPTCHA, detail=f"HTTP {status}, a challenge ({challenge})"
        )
    detail = "empty body" if page is None else f"HTTP {status}"
    return ParseResult(outcome=Outcome.ERROR, detail=detail)


def _without_results(
    spec: EngineSpec, page: Selector, found: Extracted, result: ParseResult
) -> ParseResult:
    """An HTML page without results: the engine's no-results page, a challenge in the results'
    place, or a page no rule reads.

    The no-results text is looked for in what the page shows: engines ship the sentence among
    their scripts' strings on every page (Bing, Brave).
    """
    markers = spec.no_results
    if markers is not None:
        shown = html.visible_text(page) if markers.body_contains else ""
        marker = found_marker(shown, page, markers.body_contains, markers.xpath)
        if marker:
            return replace(result, detail=f"the engine's no-results page ({marker})")
    challenge = challenge_element(page)
    if challenge:
        return replace(result, outcome=Outcome.CAPTCHA, detail=f"a challenge ({challenge})")
    links = html.outbound_links(spec, page)
    if found.layout:
        dropped = ", ".join(f"{reason} {count}" for reason, count in sorted(result.dropped.items()))
        seen = (
            f"layout {found.layout!r}: {found.containers} result containers, none with a URL "
            f"and a title ({dropped})"
        )
    else:
        names = ", ".join(layout.layout for layout in spec.parse)
        seen = f"no result container of any layout ({names}) is on the page"
    detail = f"{seen}; not the engine's no-results page; {links} outbound links"
    return replace(result, outcome=Outcome.LAYOUT_CHANGED, detail=detail)


def _judge(spec: EngineSpec, found: Extracted, page_number: int) -> ParseResult:
    if found.block is not None:
        return ParseResult(outcome=found.block, detail=found.error)
    if found.error:
        return ParseResult(outcome=Outcome.ERROR, detail=found.error)
    if found.layout_changed:
        return ParseResult(outcome=Outcome.LAYOUT_CHANGED, detail=found.layout_changed)
    if found.shown_page is not None and found.shown_page != page_number:
        return ParseResult(
            outcome=Outcome.SOFT_BLOCK,
            detail=f"asked for page {page_number}, the engine answered with page "
            f"{found.shown_page}",
        )
    for request in (found.next_request, found.follow_up):
        if request is not None:
            ensure_engine_host(spec, request.url)
    # Results awaiting a follow-up (PubMed's ids) get their titles from it.
    results, dropped = vet_results(found.results, titled=found.follow_up is None)
    for reason, count in found.dropped.items():
        dropped[reason] = dropped.get(reason, 0) + count
    if not results:
        return ParseResult(outcome=Outcome.EMPTY, detail="no results on page", dropped=dropped)
    return ParseResult(
        outcome=Outcome.OK,
        results=results,
        next_request=found.next_request,
        follow_up=found.follow_up,
        dropped=dropped,
    )


def vet_results(
    results: Sequence[SerpResult], *, titled: bool = True
) -> tuple[tuple[SerpResult, ...], dict[str, int]]:
    """The results worth storing, and how many of the others were dropped for which reason."""
    kept = []
    dropped: dict[str, int] = {}
    for found in results:
        reason = _unfit(found, titled)
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
        else:
            kept.append(found)
    return tuple(kept), dropped


def _unfit(found: SerpResult, titled: bool) -> str:
    """Why `found` is no result ('' when it is one)."""
    if not isinstance(found.url, str) or not is_web_url(found.url):
        return "not_http"
    if not isinstance(found.title, str) or (titled and not found.title.strip()):
        return "no_title"
    # Before the URL's length: some sources build the URL from the title (Wikipedia).
    if len(found.title) > MAX_TITLE_CHARS:
        return "title_too_long"
    if len(found.url) > MAX_URL_CHARS:
        return "url_too_long"
    return ""


def parse_fetched(
    spec: EngineSpec,
    body: bytes,
    page_number: int,
    *,
    status: int = 200,
    url: str = "",
    token_page: bool = False,
) -> ParseResult:
    """The one judge of a fetched body: a token page's fields, or a result page's results."""
    if token_page:
        return parse_token_page(spec, body, status=status, url=url)
    return parse_page(spec, body, page_number, status=status, url=url)


def parse_token_page(
    spec: EngineSpec, body: bytes, *, status: int = 200, url: str = ""
) -> ParseResult:
    """Read the fields a token page (Startpage's home page) hands to page 1."""
    page = html.page_selector(body)
    block = detect_block(spec, body, status, url, page)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    if status >= 400 or page is None:
        return ParseResult(outcome=Outcome.ERROR, detail=f"token page answered HTTP {status}")
    tokens = html.form_fields(page, spec.token_fields)
    missing = [name for name in spec.token_fields if name not in tokens]
    if missing:
        return ParseResult(
            outcome=Outcome.ERROR, detail=f"token page has no {', '.join(missing)} field"
        )
    return ParseResult(outcome=Outcome.OK, tokens=tuple(tokens.items()))
