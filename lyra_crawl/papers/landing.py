"""A paper's abstract read from its landing page: metadata, structured data, then the body. Pure
(parsel, lxml, extruct; no Scrapy).

Publishers describe a paper in the page's head for indexers, and show it in the body; the
fields are tried in this order of trust, and the first one that holds an abstract wins:

1. `citation_abstract` (Highwire Press tags, what Google Scholar reads);
2. Dublin Core: `DC.description`, `DCTERMS.abstract` (any case);
3. JSON-LD: the `abstract` of a ScholarlyArticle / Article (in `@graph`, `mainEntity`, …);
4. the weak fields, written for link previews as much as for readers: the JSON-LD
   `description` of such an article, then `og:description`, then `description`;
5. microdata and RDFa (lyra_crawl.papers.landing_structured): an article item's
   `microdata:abstract`, then its `microdata:description` (weak); `rdfa:dcterms:abstract`,
   `rdfa:bibo:abstract`, `rdfa:schema:abstract`, then the RDFa descriptions (weak);
6. the body's abstract section (lyra_crawl.papers.landing_body), weak: `body:…[role=
   doc-abstract]`, an element whose id or class says abstract (`body:section.abstract`,
   `body:div#abstract`), a heading "Abstract" and what follows it (`body:h2 "Abstract"`).

A field holds an abstract when, cleaned (HTML entities decoded, tags removed, whitespace
folded, a leading "Abstract" label and a field that says the same text twice made one), it
has at least `min_chars` characters, at most `MAX_ABSTRACT_CHARS` (more is more of the page
than its abstract), and is not cut short with an ellipsis. A weak field must also end as a
sentence ends (previews are often cut mid-word and given the site's name) and share a word
with the paper's title: a site's blurb ("Founded in 1920, the NBER is …") or a citation line
("R. Florian, H. Hassan. Proceedings of …") shares none. The fields after the metadata are
read only when no metadata field holds an abstract (RDFa's parse costs more than the page's).

The answer names the field the abstract came from, or the outcome that says why there is
none: `blocked` (a bot challenge stands in for the page: Cloudflare's "Just a moment..."),
`no_metadata` (no field at all), else the most trusted field's rejection (`too_short`,
`truncated`, `not_an_abstract`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from parsel import Selector
from w3lib.html import replace_entities

from lyra_crawl.papers.landing_body import abstract_sections
from lyra_crawl.papers.landing_structured import ARTICLE_TYPES, microdata_fields, rdfa_fields

__all__ = [
    "MAX_ABSTRACT_CHARS",
    "LandingAbstract",
    "LandingOutcome",
    "clean_text",
    "judge_fields",
    "read_abstract",
]


class LandingOutcome(StrEnum):
    """What asking for a landing page and reading its metadata gave."""

    ABSTRACT = "abstract"
    BLOCKED = "blocked"
    NO_METADATA = "no_metadata"
    TOO_SHORT = "too_short"
    TRUNCATED = "truncated"
    NOT_AN_ABSTRACT = "not_an_abstract"
    # What the fetch itself can end with (lyra_crawl.papers.landing_fetch).
    NOT_FOUND = "not_found"
    NOT_HTML = "not_html"
    ROBOTS_DISALLOWED = "robots_disallowed"
    HTTP_ERROR = "http_error"
    NETWORK_ERROR = "network_error"


@dataclass(frozen=True)
class LandingAbstract:
    """The abstract and the field it came from, or the outcome and why there is none."""

    outcome: LandingOutcome
    abstract: str | None = None
    field: str | None = None
    detail: str = ""


# Meta names (lower-cased) in order of trust; `weak` fields pass the extra checks.
_STRONG_META = ("citation_abstract", "dc.description", "dcterms.abstract")
_WEAK_META = ("og:description", "description")
_JSONLD_ABSTRACT = "json-ld abstract"
_JSONLD_DESCRIPTION = "json-ld description"
_TITLE_META = ("citation_title", "dc.title", "og:title")
# The longest abstracts (structured, of reviews) run to some 5,000 characters; a body section
# twice that long is the article's text, not its abstract.
MAX_ABSTRACT_CHARS = 10_000

# Cloudflare's challenge page, served in place of the page asked for (seen on ACS, APS, Taylor &
# Francis and Annual Reviews pages, 2023).
_CHALLENGE = (
    "//script[contains(@src, '/cdn-cgi/challenge-platform/')]"
    " | //title[starts-with(., 'Just a moment')]"
)
# A well-formed tag (attributes only as name=value), so "p<0.05" or "x < y > z" stay text.
_TAG = re.compile(
    r"</?[A-Za-z][\w:.-]*(?:\s+[\w:.-]+\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s\"'<>]+))*\s*/?>"
)
# "Abstract", "ABSTRACT:" or "AbstractFood packaging…" (a heading glued to the text).
_LABEL = re.compile(r"^(?:Abstract|ABSTRACT|abstract)(?:[\s:.\-–—]+|(?=[A-Z][a-z]))")
_ELLIPSIS = ("…", "...")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
_WORD = re.compile(r"[^\W\d_]{4,}")
# What separates a page's <title> from the site's name ("… - PubMed - NCBI", "… | eLife").
_TITLE_SEPARATOR = re.compile(r"\s[-|–—]\s")
# Words of four letters or more that say nothing of a paper's subject.
_FUNCTION_WORDS = frozenset(
    {
        "about",
        "also",
        "among",
        "been",
        "from",
        "have",
        "into",
        "more",
        "such",
        "than",
        "that",
        "their",
        "these",
        "this",
        "through",
        "under",
        "upon",
        "using",
        "were",
        "what",
        "when",
        "where",
        "which",
        "with",
        "within",
        "without",
    }
)


def read_abstract(page: str | Selector, *, min_chars: int) -> LandingAbstract:
    """The abstract a landing page gives, at least `min_chars` characters long."""
    first = None
    for verdict in _verdicts(page, min_chars):
        if verdict.outcome is LandingOutcome.ABSTRACT:
            return verdict
        first = first or verdict
    return first or LandingAbstract(
        LandingOutcome.NO_METADATA,
        detail="no citation_abstract, Dublin Core, JSON-LD, description, microdata or RDFa"
        " field and no abstract section",
    )


def judge_fields(page: str | Selector, *, min_chars: int) -> list[LandingAbstract]:
    """Every field of the page judged as an abstract, in order of trust."""
    return list(_verdicts(page, min_chars))


def _verdicts(page: str | Selector, min_chars: int) -> Iterator[LandingAbstract]:
    """Each field judged in turn, so that a reader stops at the first abstract."""
    selector = page if isinstance(page, Selector) else Selector(text=page, type="html")
    if selector.xpath(_CHALLENGE):
        yield LandingAbstract(
            LandingOutcome.BLOCKED,
            detail="a bot challenge page (Cloudflare), not the landing page",
        )
        return
    metas = _meta_values(selector)
    title_words = _subject_words(_title(selector, metas))
    for field, raw, weak in _candidates(selector, metas):
        yield _judge(field, clean_text(raw), min_chars, title_words if weak else None)


def clean_text(raw: str) -> str:
    """Entities decoded (twice escaped too), tags removed, whitespace folded, label dropped."""
    text = raw
    for _ in range(2):  # some publishers escape an HTML abstract twice
        text = _TAG.sub(" ", replace_entities(text))
    text = _LABEL.sub("", " ".join(text.split()))
    return _said_once(text)


def _said_once(text: str) -> str:
    """A field that holds the same text twice (nature.com's dc.description), as said once."""
    half, rest = divmod(len(text), 2)
    if rest and text[half] == " " and text[:half] == text[half + 1 :]:
        return text[:half]
    return text


def _judge(field: str, text: str, min_chars: int, title_words: set[str] | None) -> LandingAbstract:
    if not text:
        return LandingAbstract(LandingOutcome.TOO_SHORT, field=field, detail=f"{field} is empty")
    if text.endswith(_ELLIPSIS):
        return LandingAbstract(
            LandingOutcome.TRUNCATED, field=field, detail=f"{field} is cut short with an ellipsis"
        )
    if len(text) < min_chars:
        return LandingAbstract(
            LandingOutcome.TOO_SHORT,
            field=field,
            detail=f"{field} has {len(text)} characters (fewer than {min_chars})",
        )
    if len(text) > MAX_ABSTRACT_CHARS:
        return LandingAbstract(
            LandingOutcome.NOT_AN_ABSTRACT,
            field=field,
            detail=f"{field} has {len(text)} characters, more than any abstract"
            f" ({MAX_ABSTRACT_CHARS}): more of the page than its abstract",
        )
    if title_words is not None:
        if not _SENTENCE_END.search(text):
            return LandingAbstract(
                LandingOutcome.TRUNCATED,
                field=field,
                detail=f"{field} does not end as a sentence (a preview cut short)",
            )
        if title_words and not title_words & _subject_words(text):
            return LandingAbstract(
                LandingOutcome.NOT_AN_ABSTRACT,
                field=field,
                detail=f"{field} shares no word with the title (a site blurb or citation line)",
            )
    return LandingAbstract(LandingOutcome.ABSTRACT, abstract=text, field=field)


def _candidates(selector: Selector, metas: dict[str, list[str]]) -> Iterator[tuple[str, str, bool]]:
    """(field, raw value, weak) in order of trust."""
    for name in _STRONG_META:
        for value in metas.get(name, ()):
            yield name, value, False
    articles = list(_jsonld_articles(selector))
    for article in articles:
        for value in _texts(article.get("abstract")):
            yield _JSONLD_ABSTRACT, value, False
    for article in articles:
        for value in _texts(article.get("description")):
            yield _JSONLD_DESCRIPTION, value, True
    for name in _WEAK_META:
        for value in metas.get(name, ()):
            yield name, value, True
    yield from microdata_fields(selector.root)
    yield from rdfa_fields(selector.root)
    for field, text in abstract_sections(selector.root):
        yield field, text, True


def _meta_values(selector: Selector) -> dict[str, list[str]]:
    """Every meta tag's content by its name or property, lower-cased, in page order."""
    values: dict[str, list[str]] = {}
    for meta in selector.xpath("//meta[@content]"):
        attrib = meta.attrib
        name = (attrib.get("name") or attrib.get("property") or "").strip().lower()
        if name:
            values.setdefault(name, []).append(attrib["content"])
    return values


def _jsonld_articles(selector: Selector) -> Iterator[dict[str, Any]]:
    for script in selector.xpath('//script[@type="application/ld+json"]/text()').getall():
        try:
            document = json.loads(script, strict=False)  # raw newlines inside strings are common
        except ValueError:
            continue
        yield from _articles_in(document)


def _articles_in(node: Any) -> Iterator[dict[str, Any]]:
    """Article nodes anywhere in a JSON-LD document (top level, @graph, mainEntity, …)."""
    if isinstance(node, list):
        for child in node:
            yield from _articles_in(child)
    elif isinstance(node, dict):
        types = node.get("@type")
        names = types if isinstance(types, list) else [types]
        if any(isinstance(t, str) and t.rsplit("/", 1)[-1] in ARTICLE_TYPES for t in names):
            yield node
        for child in node.values():
            yield from _articles_in(child)


def _texts(value: Any) -> Iterator[str]:
    """The strings of a JSON-LD value: a string, a list of them, or {"@value": …}."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, dict):
        yield from _texts(value.get("@value"))


def _title(selector: Selector, metas: dict[str, list[str]]) -> str:
    for name in _TITLE_META:
        if metas.get(name):
            return metas[name][0]
    page_title = selector.xpath("//title/text()").get() or ""
    return _TITLE_SEPARATOR.split(page_title.strip(), maxsplit=1)[0]


def _subject_words(text: str) -> set[str]:
    words = {word.lower() for word in _WORD.findall(text)}
    return words - _FUNCTION_WORDS
