"""The guard every real page passes: results come from where results are, and a challenge is
never read as a stale parser.

Placement: each result a parser returns comes from a block one level below its layout's
results container (the layout's `container`, else the page's body), so nothing a module holds
or a result lists under itself is read as a result of its own. A result is misplaced when it
lies
- outside the container;
- in a module: after a head inside one of its ancestors (a heading of level 1 or 2, an accordion
  question), beside a block that holds that head alone, or in a list of cards (role=list);
- inside another result, or in a list (ul, ol, table) that shares a block with a result before it.

Challenges: a page read as layout_changed shows no sign of a challenge: no CAPTCHA or
proof-of-work widget, no challenge form, script, frame or site key, no "not a robot" wording.

The rules name no engine's classes and look at the page on their own, apart from the parsers'
rules: the next module or challenge a layout adds fails a test here before it fails a crawl.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines import html
from lyra_crawl.engines.xpaths import first_match

# ARIA levels of a module's title: a result's own title is a level 3 (h3) or deeper.
MODULE_HEADING_LEVELS = frozenset({"1", "2"})
CARD_LISTS = frozenset({"list", "listbox", "tablist"})
LISTS = frozenset({"ul", "ol", "table"})
# Attribute values and wording only a challenge page has.
_CHALLENGE_ATTRIBUTE = re.compile(
    rb"""<[a-z][\w-]*\b[^>]*?\b(?:class|id|action|src|name|data-callback)\s*=\s*["']"""
    rb"""[^"']*(?:captcha|challenge|turnstile|altcha)""",
    re.IGNORECASE,
)
_CHALLENGE_WORDS = re.compile(
    rb"data-sitekey|<altcha-widget|not a robot|are you a robot|verify (?:that )?you(?:'|\xe2\x80"
    rb"\x99| a)re (?:a )?human|confirm you(?:'|\xe2\x80\x99| a)re (?:a )?human|unusual traffic"
    rb"|proof[- ]of[- ]work|schedule a captcha",
    re.IGNORECASE,
)


def misplaced_results(spec: EngineSpec, body: bytes) -> list[str]:
    """Why each misplaced result of the page is misplaced (none: [])."""
    page = html.page_selector(body)
    if page is None:
        return []
    located = html.located_results(spec, page)
    found = first_match(page.root, located.layout.container)
    container = found[0] if found else page.root.find("body")
    if container is None:
        container = page.root
    nodes = [node for node, _ in located.results]
    problems = []
    for index, (node, result) in enumerate(located.results):
        why = _misplaced(node, nodes[:index], set(nodes) - {node}, container)
        if why:
            problems.append(f"result {index + 1} ({result.url}) {why}")
    return problems


def _misplaced(
    node: etree._Element,
    before: list[etree._Element],
    others: set[etree._Element],
    container: etree._Element,
) -> str:
    ancestors = list(_up_to(node, container))
    if ancestors[-1] is not container:
        return "is outside the results container"
    for ancestor in ancestors[1:-1]:
        if ancestor in others:
            return f"is inside another result's block ({_named(ancestor)})"
        if ancestor.get("role") in CARD_LISTS:
            return f"is in a list of cards ({_named(ancestor)})"
        if ancestor.tag in LISTS and _shares_block(ancestor, before, container):
            return f"is in a list under another result ({_named(ancestor)})"
    for ancestor in ancestors[:-1]:
        head = _module_head_before(ancestor)
        if head:
            return f"is in a module headed {head!r}"
    return ""


def _up_to(node: etree._Element, container: etree._Element) -> Iterator[etree._Element]:
    """`node` and its ancestors, up to and with `container` (or the root, when it is not one)."""
    while node is not None:
        yield node
        if node is container:
            return
        node = node.getparent()


def _shares_block(
    listing: etree._Element, before: list[etree._Element], container: etree._Element
) -> bool:
    """Whether a result before this list, outside it, shares a block with it in the container."""
    blocks = {a for a in _up_to(listing, container) if a is not container}
    for other in before:
        inside = listing in set(_up_to(other, listing))
        if not inside and not blocks.isdisjoint(_up_to(other, container)):
            return True
    return False


def _module_head_before(element: etree._Element) -> str:
    """The text of a module head that a sibling before `element` holds alone ('' if none)."""
    for sibling in element.itersiblings(preceding=True):
        if not isinstance(sibling.tag, str) or sibling.tag in ("script", "style"):
            continue
        text = _text(sibling)
        for head in _heads(sibling):
            if _text(head) == text and not sibling.xpath(".//a[@href]"):
                return text
    return ""


def _heads(element: etree._Element) -> Iterator[etree._Element]:
    for head in element.iter():
        if not isinstance(head.tag, str):
            continue
        is_heading = head.get("role") == "heading" and head.get("aria-level") in (
            MODULE_HEADING_LEVELS
        )
        is_question = head.get("aria-expanded") is not None or head.tag == "summary"
        if (is_heading or is_question) and _text(head):
            yield head


def _text(element: etree._Element) -> str:
    return " ".join(" ".join(element.itertext()).split())


def _named(element: etree._Element) -> str:
    classes = ".".join((element.get("class") or "").split()[:2])
    role = element.get("role")
    return element.tag + (f".{classes}" if classes else "") + (f"[role={role}]" if role else "")


def challenge_signs(body: bytes) -> list[str]:
    """The signs of a challenge the body shows: widgets, challenge forms and scripts, wording."""
    signs = [match.group(0)[-80:] for match in _CHALLENGE_ATTRIBUTE.finditer(body)]
    signs += [match.group(0) for match in _CHALLENGE_WORDS.finditer(body)]
    return [sign.decode("utf-8", "replace") for sign in signs[:5]]
