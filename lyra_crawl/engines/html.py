"""Parser for HTML result pages, driven by the XPath rules in search_parsers.yaml. Pure.

Each rule is a list of XPath alternatives: structural selectors first (a result link holding an
`h3`), obfuscated class names after them, so a class rename does not empty the results.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from urllib.parse import urljoin

import lxml.html
from lxml import etree

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, PageRequest, SerpResult
from lyra_crawl.engines.request import page_index
from lyra_crawl.engines.urls import is_web_url, unwrap_redirect

_UTF8_PARSER = lxml.html.HTMLParser(encoding="utf-8")
# ASCII digits, few enough for int(): a pager never shows a 5,000-digit page number.
_NUMBER_RE = re.compile(r"[0-9]{1,9}")


def parse_document(body: bytes) -> lxml.html.HtmlElement | None:
    """The page's DOM, or None when there is nothing to parse."""
    if not body.strip():
        return None
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        parser = None  # not UTF-8: let lxml follow the page's own <meta charset>
    else:
        # Pages saved without a charset (fragments, some engines) would be read as Latin-1.
        parser = _UTF8_PARSER
    try:
        return lxml.html.document_fromstring(body, parser=parser)
    except (etree.ParserError, ValueError):
        return None


def element_text(node: object) -> str:
    """Visible text of an element or attribute value, whitespace folded."""
    if isinstance(node, str):
        return " ".join(node.split())
    if isinstance(node, etree._Element):
        return " ".join(" ".join(node.itertext()).split())
    return ""


@lru_cache(maxsize=1024)
def compiled(xpath: str) -> etree.XPath:
    """The XPath compiled once: rules run for every result of every page."""
    return etree.XPath(xpath)


def first_match(node: etree._Element, xpaths: Sequence[str]) -> list:
    """The nodes found by the first alternative that finds any."""
    for xpath in xpaths:
        found = compiled(xpath)(node)
        if found:
            return found
    return []


def first_text(node: etree._Element, xpaths: Sequence[str]) -> str:
    for found in first_match(node, xpaths):
        text = element_text(found)
        if text:
            return text
    return ""


def extract(spec: EngineSpec, doc: lxml.html.HtmlElement, page_number: int) -> Extracted:
    """Organic results in page order, the page number shown, and the next-page form."""
    rules = spec.parse
    results = []
    dropped: dict[str, int] = {}
    for node in first_match(doc, rules["results"]):
        href = first_text(node, rules["url"])
        title = first_text(node, rules["title"])
        reason = None
        url = result_url(spec, href)
        if not href:
            reason = "no_url"
        elif not is_web_url(url):
            reason = "not_http"
        elif not title:
            reason = "no_title"
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        results.append(
            SerpResult(
                url=url,
                title=title,
                snippet=first_text(node, rules.get("snippet", ())),
                date=first_text(node, rules.get("date", ())) or None,
            )
        )
    return Extracted(
        results=tuple(results),
        shown_page=shown_page(spec, doc),
        next_request=next_page_form(spec, doc, page_number) if spec.next_page == "form" else None,
        dropped=dropped,
    )


def result_url(spec: EngineSpec, href: str) -> str:
    """The absolute target of a result link, unwrapped from the engine's redirect; '' if none."""
    if not href:
        return ""
    try:
        return unwrap_redirect(urljoin(spec.url, href))
    except ValueError:  # an unbalanced IPv6 bracket: no URL at all
        return ""


def shown_page(spec: EngineSpec, doc: lxml.html.HtmlElement) -> int | None:
    """The page number the pager marks as current, in our numbering (1 = first page)."""
    match = _NUMBER_RE.search(first_text(doc, spec.parse.get("current_page", ())))
    return int(match.group()) if match else None


def next_page_form(
    spec: EngineSpec, doc: lxml.html.HtmlElement, page_number: int
) -> PageRequest | None:
    """The engine's own form for page N+1, posted back as is (it carries tokens: vqd, sc)."""
    xpath = (spec.next_page_form or "").format(next_page=page_index(spec, page_number + 1))
    forms = doc.xpath(xpath) if xpath else []
    if not forms:
        return None
    form = forms[0]
    fields = [
        (name, value)
        for element in form.xpath(".//input[@name]")
        if element.get("type", "text").lower() not in ("submit", "button", "image")
        for name, value in [(element.get("name"), element.get("value", ""))]
    ]
    action = urljoin(spec.url, form.get("action") or spec.url)
    method = (form.get("method") or "GET").upper()
    return PageRequest(
        url=action, method="POST" if method == "POST" else "GET", formdata=tuple(fields)
    )


def form_fields(doc: lxml.html.HtmlElement, names: Sequence[str]) -> dict[str, str]:
    """Values of the named inputs (first of each), e.g. Startpage's `sc` on its home page."""
    values = {}
    for name in names:
        found = doc.xpath("//input[@name=$name]/@value", name=name)
        if found and found[0]:
            values[name] = str(found[0])
    return values
