"""A results page in a layout the parse rules no longer read: the simulator's `--layout-changed-at`.

An engine's redesign keeps the results (their links, titles and snippets) and changes what
holds them. The simulator does the same to its own results page: every element a result XPath
of the bundled `search_parsers.yaml` finds (in any of the engine's layouts) becomes a custom
element without attributes, as engines moving to web components do. So the fault follows the
rules wherever they go, and no rule can still read the page by accident.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from lxml import etree, html

NEW_CONTAINER = "serp-result"
# A container inside a container shows up once the outer one is renamed; more rounds than
# this mean an XPath still finds what was renamed, which the rename could never end.
MAX_ROUNDS = 20


@lru_cache(maxsize=32)
def result_xpaths(engine: str) -> tuple[str, ...]:
    """Every `results` XPath of every layout of `engine` in the bundled config ('' for APIs)."""
    # Imported here: a simulator without --layout-changed-at never loads the config's models.
    from lyra_crawl.config import load_config

    spec = load_config().engine(engine)
    return tuple(xpath for layout in spec.parse for xpath in layout.results)


def changed_document(body: str, xpaths: Sequence[str]) -> str:
    """`body`, a whole HTML page, with its result containers renamed."""
    root = html.document_fromstring(body)
    _rename_containers(root, xpaths)
    return "<!DOCTYPE html>\n" + html.tostring(root, encoding="unicode")


def changed_fragment(markup: str, xpaths: Sequence[str]) -> str:
    """`markup`, a piece of a page's body, with its result containers renamed."""
    parent = html.fragment_fromstring(markup, create_parent="div")
    _rename_containers(parent, xpaths)
    return (parent.text or "") + "".join(
        html.tostring(child, encoding="unicode") for child in parent
    )


def _rename_containers(root: etree._Element, xpaths: Sequence[str]) -> None:
    if not xpaths:
        raise ValueError("the engine has no result XPaths: its layout cannot change")
    for _ in range(MAX_ROUNDS):
        found = [node for xpath in xpaths for node in root.xpath(xpath)]
        if not found:
            return
        for node in found:
            node.tag = NEW_CONTAINER
            node.attrib.clear()
    raise ValueError(f"result containers keep matching {list(xpaths)} after being renamed")
