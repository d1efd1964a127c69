"""The page number a saved result page states about itself, and how it states it. Pure.

For `scrapy parse-serp`, so a saved page needs no `--page` when it says which page it is. Looked
for in order: the URL the page came from (when given), the pager's current page (a layout's
`current_page` rule), the page's canonical link, then the engine's own "Next" control — a link
or a form whose paging parameter asks for page N+1 (Mojeek's, Google's and Bing's "Next"
links, Startpage's "Next" form). A paging parameter is read with the engine's
own formula (`pagination_type`, `pagination_param`, `offset_base`, `page_base`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, urljoin, urlsplit

from parsel import Selector

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import whole_number
from lyra_crawl.engines.html import shown_page
from lyra_crawl.engines.xpaths import first_text

# What a "Next" control carries somewhere: rel="next", id="pnnext", title="Next page", …
_LOWER = "translate({}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"
_NAMED_NEXT = (
    f"contains({_LOWER.format('concat(@rel, @id, @class, @title, @aria-label, @data-test-id)')}"
    ", 'next')"
)
_SAYS_NEXT = f"{_LOWER.format('normalize-space(.)')} = 'next'"
NEXT_LINKS = f"//a[@href][{_NAMED_NEXT} or {_SAYS_NEXT}] | //link[@href][@rel='next']"
NEXT_FORMS = (
    f"//form[.//input[@type='submit'][{_LOWER.format('normalize-space(@value)')} = 'next']"
    f" or .//button[{_SAYS_NEXT}]]"
)


@dataclass(frozen=True)
class StatedPage:
    number: int
    # How the page says it, for people: "the pager marks page 2".
    statement: str


def stated_page(spec: EngineSpec, page: Selector | None, url: str = "") -> StatedPage | None:
    """The page number `page` (fetched from `url`, when known) states, or None."""
    if url:
        number = page_of_url(spec, url)
        if number is not None:
            return StatedPage(number, f"its URL asks for {_asked(spec, url)}")
        if _first_page_url(spec, url):
            return StatedPage(1, f"its URL has no {spec.pagination_param}, as page 1 has not")
    if page is None:
        return None
    for layout in spec.parse:
        number = shown_page(layout, page)
        if number is not None:
            return StatedPage(number, f"the pager marks page {number}")
    canonical = first_text(page.root, ["//link[@rel='canonical']/@href"])
    number = page_of_url(spec, canonical) if canonical else None
    if number is not None:
        return StatedPage(number, f"its canonical link asks for {_asked(spec, canonical)}")
    return _before_next(spec, page)


def page_of_url(spec: EngineSpec, url: str) -> int | None:
    """The page a link to the engine's search asks for by its paging parameter, else None."""
    try:
        parts = urlsplit(urljoin(spec.url, url))
    except ValueError:
        return None
    if parts.path.rstrip("/") != urlsplit(spec.url).path.rstrip("/"):
        return None
    return page_of_fields(spec, parse_qsl(parts.query))


def _first_page_url(spec: EngineSpec, url: str) -> bool:
    """A search URL without the paging parameter the engine leaves out on page 1 only."""
    if spec.pagination_param not in spec.first_page_omits:
        return False
    parts = urlsplit(urljoin(spec.url, url))
    fields = dict(parse_qsl(parts.query))
    searched = any("{query}" in str(value) and key in fields for key, value in spec.params.items())
    return (
        searched
        and spec.pagination_param not in fields
        and parts.path.rstrip("/") == urlsplit(spec.url).path.rstrip("/")
    )


def page_of_fields(spec: EngineSpec, fields: Iterable[tuple[str, str]]) -> int | None:
    """The page that `spec.pagination_param` among `fields` asks for, in our numbering."""
    value = whole_number(dict(fields).get(spec.pagination_param))
    if value is None:
        return None
    if spec.pagination_type == "offset":
        offset = value - spec.offset_base
        if offset < 0 or offset % spec.results_per_page:
            return None
        return offset // spec.results_per_page + 1
    number = value - spec.page_base + 1
    return number if number >= 1 else None


def _before_next(spec: EngineSpec, page: Selector) -> StatedPage | None:
    """The page before the one every "Next" control of the page asks for, when they agree."""
    asked: dict[int, str] = {}
    for link in page.xpath(NEXT_LINKS):
        href = link.attrib["href"]
        number = page_of_url(spec, href)
        if number is not None:
            asked.setdefault(number, f"its Next link asks for {_asked(spec, href)}")
    # A form's offset counts the results the engine has shown so far, which is not always
    # the formula's step (DuckDuckGo's page 1 held 30 in 2020, 10 in 2025): only a page index
    # (Startpage's `page`) says the page.
    forms = page.xpath(NEXT_FORMS) if spec.pagination_type == "page" else []
    for form in forms:
        fields = _form_fields(form)
        number = page_of_fields(spec, fields.items())
        if number is not None:
            value = fields[spec.pagination_param]
            asked.setdefault(number, f"its Next form asks for {spec.pagination_param}={value}")
    if len(asked) != 1:
        return None  # none, or controls that disagree: nothing the page clearly states
    ((following, how),) = asked.items()
    if following < 2:
        return None
    return StatedPage(following - 1, f"{how} (page {following})")


def _form_fields(form: Selector) -> Mapping[str, str]:
    return {
        field.attrib["name"]: field.attrib.get("value", "")
        for field in form.xpath(".//input[@name]")
    }


def _asked(spec: EngineSpec, url: str) -> str:
    """`param=value` as the URL carries it."""
    query = dict(parse_qsl(urlsplit(urljoin(spec.url, url)).query))
    return f"{spec.pagination_param}={query.get(spec.pagination_param, '')}"
