"""A paper's abstract in a landing page's microdata and RDFa, read with extruct. Pure.

IOPscience marks the abstract in the body with `itemprop="description"` inside an
`itemscope itemtype="http://schema.org/ScholarlyArticle"`; RDFa pages say
`property="dcterms:abstract"` (or `schema:abstract`, `bibo:abstract`, with their prefixes or a
`vocab`). extruct's W3C microdata and RDFa extractors resolve item scopes, `itemref`, prefixes
and vocabularies as the specifications say.

Only an article's description counts (schema.org's ScholarlyArticle, Article, … as for
JSON-LD): a product's or an organisation's does not. Cost: microdata is read from the page's
parsed tree (about a millisecond a page, 20 on a page with hundreds of items); RDFa needs
pyRdfa's own parse and graph (10 to 90 ms a page), so it runs only when the page has an RDFa
`property` naming an abstract or a description other than Open Graph's and Twitter's (read
from the head's meta tags already).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import lxml.etree
from lxml.html import HtmlElement

__all__ = ["ARTICLE_TYPES", "microdata_fields", "rdfa_fields"]

# schema.org types whose abstract is a paper's (types may be given as full URLs).
ARTICLE_TYPES = frozenset({"ScholarlyArticle", "MedicalScholarlyArticle", "Article"})

# Property IRIs read, with the field each is recorded as, and whether it is a weak field.
_RDFA_PROPERTIES = {
    "http://purl.org/dc/terms/abstract": ("rdfa:dcterms:abstract", False),
    "http://purl.org/ontology/bibo/abstract": ("rdfa:bibo:abstract", False),
    "http://schema.org/abstract": ("rdfa:schema:abstract", False),
    "https://schema.org/abstract": ("rdfa:schema:abstract", False),
    "http://purl.org/dc/terms/description": ("rdfa:dcterms:description", True),
    "http://purl.org/dc/elements/1.1/description": ("rdfa:dc:description", True),
    "http://schema.org/description": ("rdfa:schema:description", True),
    "https://schema.org/description": ("rdfa:schema:description", True),
}
# schema.org's own properties are an article's only when the subject is an article.
_ARTICLE_ONLY = frozenset({"rdfa:schema:abstract", "rdfa:schema:description"})
# A page worth pyRdfa's parse: some element has an RDFa property that may be an abstract.
_RDFA_ABSTRACT = (
    "//*[@property][not(starts-with(@property, 'og:')) and not(starts-with(@property, 'twitter:'))"
    " and (contains(translate(@property, 'ABSTRACT', 'abstract'), 'abstract')"
    " or contains(translate(@property, 'DESCRIPTION', 'description'), 'description'))]"
)


@cache
def _microdata() -> Any:
    """extruct's microdata extractor, imported on first use: extruct's package imports requests
    and microformats too, which no serp crawl (nor any command that does not read a landing
    page) should pay for."""
    from extruct.w3cmicrodata import MicrodataExtractor

    return MicrodataExtractor(strict=True)


@cache
def _rdfa() -> tuple[Any, Any]:
    """extruct's RDFa extractor and its XML DOM parse, imported on first use (see _microdata)."""
    from extruct.rdfa import RDFaExtractor
    from extruct.utils import parse_xmldom_html

    return RDFaExtractor(), parse_xmldom_html


def microdata_fields(root: HtmlElement) -> Iterator[tuple[str, str, bool]]:
    """(field, text, weak) of the abstract and the description of each article item."""
    if not root.xpath("//*[@itemscope]"):
        return
    for item in _items(_microdata().extract_items(root, None)):
        if not _is_article(item.get("type") or []):
            continue
        properties = item.get("properties") or {}
        for name, weak in (("abstract", False), ("description", True)):
            for value in properties.get(name, ()):
                if isinstance(value, str):
                    yield f"microdata:{name}", value, weak


def rdfa_fields(root: HtmlElement) -> Iterator[tuple[str, str, bool]]:
    """(field, text, weak) of each abstract or description RDFa gives a subject of the page."""
    if not root.xpath(_RDFA_ABSTRACT):
        return
    html = lxml.etree.tostring(root.getroottree(), encoding="utf-8", method="html")
    try:
        extractor, parse_xmldom_html = _rdfa()
        nodes = extractor.extract_items(parse_xmldom_html(html, encoding="utf-8"))
    except Exception:  # pyRdfa on arbitrary markup: a page it cannot read has no RDFa field
        return
    for node in nodes:
        article = _is_article(node.get("@type") or [])
        for iri, (field, weak) in _RDFA_PROPERTIES.items():
            if field in _ARTICLE_ONLY and not article:
                continue
            for value in node.get(iri, ()):
                if isinstance(value, dict) and isinstance(value.get("@value"), str):
                    yield field, value["@value"], weak


def _items(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every item, nested ones included (an article inside a WebPage's mainEntity)."""
    for item in items:
        yield item
        for values in (item.get("properties") or {}).values():
            yield from _items([v for v in values if isinstance(v, dict)])


def _is_article(types: list[str]) -> bool:
    return any(t.rstrip("/").rsplit("/", 1)[-1] in ARTICLE_TYPES for t in types)
