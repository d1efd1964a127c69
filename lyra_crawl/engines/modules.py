"""The modules inside an engine's results container, found by their structure. Pure.

A module (People also ask, Top stories, a video carousel, Things to know) starts with a head:
its heading, or a question's toggle. The head with the wrappers that hold nothing else is the
head's block; whatever follows that block in its parent is the module's: the answer under a
question, the carousel under a heading. A link there is never an organic result, however much it
looks like one (an expanded answer holds a title link like any result). Nor is a link outside
the container (a side column's answers, a block a browser extension put in). The rule names no
class, so a layout that renames its classes keeps it; the layout's `modules` XPaths say what a
head is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lxml import etree

from lyra_crawl.config import Layout
from lyra_crawl.engines.xpaths import compiled, first_match

# Elements that are never content: a block whose only siblings are these holds nothing else.
_NOT_CONTENT = frozenset({"script", "style", "template"})


def in_container(
    layout: Layout, root: etree._Element, nodes: Sequence[etree._Element]
) -> tuple[list[etree._Element], dict[str, int]]:
    """The result nodes inside the layout's container and in none of its modules, with how many
    were dropped for which reason (`outside_container`, `module`).

    Only a layout with `modules` is read so; a page without its container is read whole.
    """
    found = first_match(root, layout.container) if layout.modules and nodes else []
    if not found:
        return list(nodes), {}
    container = found[0]
    contents = set(_module_contents(container, layout.modules))
    kept = []
    dropped: dict[str, int] = {}
    for node in nodes:
        reason = _placed(node, contents, container)
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
        else:
            kept.append(node)
    return kept, dropped


def _module_contents(container: etree._Element, heads: Sequence[str]) -> Iterable[etree._Element]:
    """Every element that follows a module head's block, beside it in its parent."""
    for xpath in heads:
        for head in compiled(xpath)(container):
            block = _head_block(head, container)
            yield from (sibling for sibling in block.itersiblings() if _is_content(sibling))


def _head_block(head: etree._Element, container: etree._Element) -> etree._Element:
    """The head with every wrapper around it that holds nothing else (up to the container)."""
    block = head
    parent = block.getparent()
    while parent is not None and parent is not container and _only_content(block, parent):
        block = parent
        parent = block.getparent()
    return block


def _only_content(child: etree._Element, parent: etree._Element) -> bool:
    return all(sibling is child or not _is_content(sibling) for sibling in parent)


def _is_content(node: etree._Element) -> bool:
    return isinstance(node.tag, str) and node.tag not in _NOT_CONTENT


def _placed(node: etree._Element, contents: set[etree._Element], container: etree._Element) -> str:
    """Why `node` is no result of the container ('' when it is one)."""
    while node is not None and node is not container:
        if node in contents:
            return "module"
        node = node.getparent()
    return "" if node is container else "outside_container"
