"""XPath rules run on a page's lxml elements, and the text of what they find. Pure.

The rules run as compiled lxml XPaths: a parsel Selector's `.xpath()` compiles its expression
and wraps every node it finds on each call, which cost more than the XPaths themselves (0.3-0.5
ms a page).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from lxml import etree


@lru_cache(maxsize=1024)
def compiled(xpath: str) -> etree.XPath:
    return etree.XPath(xpath, smart_strings=False)


def first_match(node: etree._Element, xpaths: Sequence[str]) -> list[Any]:
    """What the first alternative that finds anything finds, evaluated from `node`."""
    for xpath in xpaths:
        found = compiled(xpath)(node)
        if found:
            return found
    return []


def first_text(node: etree._Element, xpaths: Sequence[str]) -> str:
    """The first non-empty text among what the first alternative that finds anything finds."""
    for found in first_match(node, xpaths):
        text = text_of(found)
        if text:
            return text
    return ""


def text_of(found: Any) -> str:
    """Visible text of an element, or the value of an attribute, whitespace folded.

    An element's text nodes are joined with spaces, the same string as
    `" ".join(found.xpath(".//text()"))` but read from the element itself. `normalize-space()`
    would glue `Java<b>Script</b>` into one word and changes 78 of the 291 titles and snippets
    of the captured pages.
    """
    if isinstance(found, str):
        return " ".join(found.split())
    if isinstance(found, etree._Element):
        return " ".join(" ".join(found.itertext()).split())
    return ""  # a number or boolean an XPath function returned
