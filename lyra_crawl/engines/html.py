"""Parser for HTML result pages, driven by the XPath rules in search_parsers.yaml. Pure.

The page is a parsel Selector, as Scrapy's `response.selector` is. Each rule is a list of XPath
alternatives: structural selectors first (a result link holding an `h3`), obfuscated class
names after them, so a class rename does not empty the results. The rules run as compiled lxml
XPaths on the page's elements (engines.xpaths); results inside a module of the results
container are dropped (engines.modules).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from lxml import etree
from parsel import Selector
from w3lib.encoding import html_body_declared_encoding, read_bom

from lyra_crawl.config import EngineSpec, Layout
from lyra_crawl.engines.base import Extracted, PageRequest, SerpResult
from lyra_crawl.engines.modules import in_container
from lyra_crawl.engines.request import page_index
from lyra_crawl.engines.urls import is_web_url, unwrap_redirect
from lyra_crawl.engines.xpaths import compiled, first_match, first_text

# ASCII digits, few enough for int(): a pager never shows a 5,000-digit page number.
_NUMBER_RE = re.compile(r"[0-9]{1,9}")
# Input types a form post leaves out (only the button pressed would be sent).
_BUTTONS = ("submit", "button", "image")
# What may follow a tag's name: its attributes, its end, or a self-closing slash.
_TAG_ENDS = (b" ", b"\t", b"\n", b"\r", b"\f", b"/", b">")


def page_selector(body: bytes, encoding: str | None = None) -> Selector | None:
    """The page as a Selector, or None when there is nothing to parse.

    `encoding` is the charset of the page `body` was cut from, when it is only a part of it.
    """
    if not body or body.isspace():
        return None
    return Selector(body=body, encoding=encoding or page_encoding(body), type="html")


def results_region(spec: EngineSpec, body: bytes) -> bytes | None:
    """The bytes from the start tag of the engine's `results_within` element to its last end
    tag, or None when the engine names none or the page lacks it.

    libxml2's cost grows with the elements it builds: Ecosia's 451 kB page takes 1.9 ms whole
    and 1.2 ms from its <main> alone, which holds every result and the pager.
    """
    if spec.results_within is None:
        return None
    name = spec.results_within.encode()
    start = _tag_at(body, b"<" + name)
    end = _tag_at(body, b"</" + name, last=True)
    if start < 0 or end <= start:
        return None
    return body[start:end]


def _tag_at(body: bytes, tag: bytes, *, last: bool = False) -> int:
    """Where `tag` first (or, with `last`, last) stands as a whole tag name; -1 if nowhere."""
    at = body.rfind(tag) if last else body.find(tag)
    while at >= 0 and body[at + len(tag) : at + len(tag) + 1] not in _TAG_ENDS:
        at = body.rfind(tag, 0, at) if last else body.find(tag, at + 1)
    return at


def page_encoding(body: bytes) -> str:
    """The charset to read the page in.

    A page that declares UTF-8, or decodes as UTF-8, is read as UTF-8: pages saved without a
    charset (fragments, some engines) would be read as Latin-1, and pages re-saved as UTF-8 keep
    their old declaration. Any other is read in the charset it declares (byte order mark,
    <meta charset>), else in cp1252, as browsers do. Decoding is the last resort: a large page
    full of emoji takes a millisecond to decode.
    """
    declared = read_bom(body)[0] or html_body_declared_encoding(body)
    if declared == "utf-8" or body.isascii():
        return "utf-8"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return declared or "cp1252"
    return "utf-8"


def visible_text(page: Selector) -> str:
    """The text the page shows: its text nodes outside scripts, styles and templates."""
    nodes = page.root.xpath(
        "//body//text()[not(ancestor::script or ancestor::style or ancestor::template)]"
    )
    return " ".join(" ".join(nodes).split())


def extract(spec: EngineSpec, page: Selector, page_number: int) -> Extracted:
    """Organic results in page order, the page number shown, and the next-page form."""
    located = located_results(spec, page)
    return Extracted(
        results=tuple(result for _, result in located.results),
        shown_page=shown_page(located.layout, page),
        next_request=next_page_form(spec, page, page_number) if spec.next_page == "form" else None,
        dropped=located.dropped,
        layout=located.layout.layout if located.containers else "",
        containers=located.containers,
    )


@dataclass(frozen=True)
class Located:
    """The results of a page with the node each was read from, and what was left out."""

    layout: Layout
    results: tuple[tuple[etree._Element, SerpResult], ...]
    # How many result containers the layout's rules found, modules' included.
    containers: int
    dropped: dict[str, int]


def located_results(spec: EngineSpec, page: Selector) -> Located:
    """Each result of the page with its node, in page order.

    The layouts are tried in order; the first whose result containers are on the page is read.
    A container outside the layout's results container or in one of its modules is dropped
    (engines.modules).
    """
    layout, nodes = _matching_layout(spec.parse, page.root)
    organic, dropped = in_container(layout, page.root, nodes)
    results = []
    for node in organic:
        href = first_text(node, layout.url)
        title = first_text(node, layout.title)
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
        found = SerpResult(
            url=url,
            title=title,
            snippet=first_text(node, layout.snippet),
            date=first_text(node, layout.date) or None,
        )
        results.append((node, found))
    return Located(layout, tuple(results), len(nodes), dropped)


def _matching_layout(layouts: Sequence[Layout], root: etree._Element) -> tuple[Layout, list[Any]]:
    """The first layout whose result containers are on the page, with them; else the first."""
    for layout in layouts:
        nodes = first_match(root, layout.results)
        if nodes:
            return layout, nodes
    return layouts[0], []


def outbound_links(spec: EngineSpec, page: Selector) -> int:
    """How many links on the page lead off the engine's own site (a sign of a stale parser)."""
    own = spec.host.removeprefix("www.")
    count = 0
    for href in page.xpath("//a/@href").getall():
        url = result_url(spec, href)
        host = urlsplit(url).hostname or ""
        if is_web_url(url) and not host.endswith(own):
            count += 1
    return count


def result_url(spec: EngineSpec, href: str) -> str:
    """The absolute target of a result link, unwrapped from the engine's redirect; '' if none."""
    if not href:
        return ""
    try:
        return unwrap_redirect(urljoin(spec.url, href))
    except ValueError:  # an unbalanced IPv6 bracket: no URL at all
        return ""


def shown_page(layout: Layout, page: Selector) -> int | None:
    """The page number the pager marks as current, in our numbering (1 = first page)."""
    match = _NUMBER_RE.search(first_text(page.root, layout.current_page))
    return int(match.group()) if match else None


def next_page_form(spec: EngineSpec, page: Selector, page_number: int) -> PageRequest | None:
    """The engine's own form for page N+1, posted back as is (it carries tokens: vqd, sc)."""
    xpath = (spec.next_page_form or "").format(next_page=page_index(spec, page_number + 1))
    forms = compiled(xpath)(page.root) if xpath else None
    if not forms:
        return None
    fields = []
    for field in forms[0].iterdescendants("input"):
        attrib = field.attrib
        if "name" in attrib and attrib.get("type", "text").lower() not in _BUTTONS:
            fields.append((attrib["name"], attrib.get("value", "")))
    form = forms[0].attrib
    action = urljoin(spec.url, form.get("action") or spec.url)
    method = (form.get("method") or "GET").upper()
    return PageRequest(
        url=action, method="POST" if method == "POST" else "GET", formdata=tuple(fields)
    )


def form_fields(page: Selector, names: Sequence[str]) -> dict[str, str]:
    """Values of the named inputs (first of each), e.g. Startpage's `sc` on its home page."""
    values = {}
    for name in names:
        value = page.xpath("//input[@name=$name]/@value", name=name).get()
        if value:
            values[name] = value
    return values
