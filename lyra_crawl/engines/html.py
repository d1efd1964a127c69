"""Parser for HTML result pages, driven by the XPath rules in search_parsers.yaml. Pure."""

from __future__ import annotations

from urllib.parse import urljoin

import lxml.html
from lxml import etree

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import PageRequest, SerpResult
from lyra_crawl.urls import is_web_url, unwrap_redirect


def parse_document(body: bytes) -> lxml.html.HtmlElement | None:
    """The page's DOM, or None when there is nothing to parse."""
    if not body.strip():
        return None
    try:
        return lxml.html.document_fromstring(body)
    except (etree.ParserError, ValueError):
        return None


def element_text(node: object) -> str:
    """Visible text of an element or attribute value, whitespace folded."""
    if isinstance(node, str):
        return " ".join(node.split())
    if isinstance(node, etree._Element):
        return " ".join(" ".join(node.itertext()).split())
    return ""


def first_text(node: lxml.html.HtmlElement, xpath: str | None) -> str:
    if not xpath:
        return ""
    found = node.xpath(xpath)
    return element_text(found[0]) if found else ""


def extract_results(
    spec: EngineSpec, doc: lxml.html.HtmlElement, dropped: dict[str, int]
) -> list[SerpResult]:
    """Organic results in page order; unusable ones are counted in `dropped` by reason."""
    rules = spec.parse
    results = []
    for node in doc.xpath(rules["results"]):
        href = first_text(node, rules["url"])
        title = first_text(node, rules["title"])
        if not href:
            dropped["no_url"] = dropped.get("no_url", 0) + 1
            continue
        url = unwrap_redirect(urljoin(spec.url, href))
        if not is_web_url(url):
            dropped["not_http"] = dropped.get("not_http", 0) + 1
            continue
        if not title:
            dropped["no_title"] = dropped.get("no_title", 0) + 1
            continue
        results.append(
            SerpResult(
                url=url,
                title=title,
                snippet=first_text(node, rules.get("snippet")),
                date=first_text(node, rules.get("date")) or None,
            )
        )
    return results


def next_page_form(spec: EngineSpec, doc: lxml.html.HtmlElement) -> PageRequest | None:
    """The engine's own next-page form, posted back as page N+1 (carries tokens such as vqd)."""
    if not spec.next_page_form:
        return None
    forms = doc.xpath(spec.next_page_form)
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
