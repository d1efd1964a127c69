"""The abstract a landing page shows in its body, for pages whose metadata lacks it. Pure (lxml).

The parts of the body that say they are the abstract, most explicit first:

1. an element with `role="doc-abstract"` (DPUB-ARIA);
2. an element whose id or class names it the abstract (`#abstract`, `section.abstract`,
   `div.abstractSection`, `div.hlFld-Abstract`, `div.wd-jnl-art-abstract`, …), innermost
   first: a container that also holds the Highlights or the abstract in another language
   comes after the block that is the abstract alone;
3. a heading "Abstract" and what follows it up to the next heading of its level.

Within each, what is not the abstract is left out: blocks named or headed Highlights,
Graphical abstract, Keywords, Simple Summary and the like; figures, scripts, forms and their
controls, "Show more" / "Expand" links, MathML's TeX annotations. A block named or headed so
is never a candidate itself, nor is anything inside the page's references or its related and
recommended articles (ScienceDirect shows the abstracts of the papers it cites). The text is
the block's as a browser shows it: inline elements joined, blocks apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from copy import deepcopy

from lxml.html import HtmlElement

__all__ = ["abstract_sections"]

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
# Elements that can hold an abstract (not links, labels, form controls or headings).
_CONTAINERS = frozenset(
    {"div", "section", "article", "aside", "blockquote", "p", "span", "li", "dd", "td", "text"}
)
# Never part of the abstract's text, wherever they are.
_LEFT_OUT_TAGS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "form",
        "button",
        "input",
        "select",
        "textarea",
        "nav",
        "figure",
        "img",
        "svg",
        "video",
        "audio",
        "iframe",
        "dialog",
        "annotation",
        "annotation-xml",
    }
)
# Words of an id or class naming a block beside the abstract, not the abstract.
_BESIDE_WORDS = frozenset(
    {
        "highlight",
        "highlights",
        "graphical",
        "keyword",
        "keywords",
        "kwd",
        "figure",
        "fig",
        "img",
        "image",
        "icon",
        "video",
        "audio",
        "btn",
        "button",
        "toggle",
        "nav",
        "menu",
        "dropzone",
    }
)
# ... and of an element that only labels the abstract or points to it.
_LABEL_WORDS = frozenset({"title", "heading", "header", "head", "label", "link", "links", "tab"})
# Words of an id or class naming a part of the page that is about other papers.
_OTHER_PAPERS_WORDS = frozenset(
    {
        "reference",
        "references",
        "ref",
        "refs",
        "bibliography",
        "related",
        "recommended",
        "recommendations",
        "citing",
        "cited",
        "similar",
    }
)
_ABSTRACT_WORDS = frozenset({"abstract", "abstracts"})
# A block the page heads so is not the abstract (the heading's whole text, any case).
_BESIDE_LABEL = re.compile(
    r"(?:research |author )?highlights|graphical abstract|visual abstract|video abstract"
    r"|key ?words?|simple summary|plain language summary|lay summary|author summary"
    r"|significance(?: statement)?|abbreviations|key points|editor'?s summary"
    r"|(?:physics )?subject headings(?: \(physh\))?"
    r"|(?:msc|pacs|jel)(?: classification)?(?: codes?)?",
    re.IGNORECASE,
)
_ABSTRACT_LABEL = re.compile(r"abstracts?\s*[:.]?", re.IGNORECASE)
_CONTROL_TEXT = re.compile(
    r"(?:show|read|view|see) (?:more|less|all)|expand(?: all| abstract)?|collapse|hide|more|less"
    r"|(?:export|download) (?:citations?|article|pdf)(?: and abstract)?",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z]?[a-z]+|[A-Z]")
# Elements that start a new line of text (the rest are joined as a browser joins them).
_BLOCKS = frozenset(
    {
        *_HEADINGS,
        *_CONTAINERS - {"span", "text"},
        "br",
        "hr",
        "ul",
        "ol",
        "dl",
        "dt",
        "table",
        "tr",
        "th",
        "header",
        "footer",
        "main",
        "pre",
        "figcaption",
    }
)
# How far up from a heading "Abstract" its text is looked for (a heading wrapped in a header).
_HEADING_CLIMB = 2


def abstract_sections(root: HtmlElement) -> Iterator[tuple[str, str]]:
    """(field, text) of each part of the body that says it is the abstract, most explicit first.

    The field says where the text came from: `body:section[role=doc-abstract]`,
    `body:div#abstract`, `body:section.abstract`, `body:h2 "Abstract"` (the heading and what
    follows it). A text given by a part read before is not given again.
    """
    seen: set[str] = set()
    for field, text in _sections(root):
        if text and text not in seen:
            seen.add(text)
            yield field, text


def _sections(root: HtmlElement) -> Iterator[tuple[str, str]]:
    for element in root.xpath("//body//*[@role='doc-abstract']"):
        if _is_own(element) and not _beside_by_label(element):
            yield f"body:{element.tag}[role=doc-abstract]", _shown_text([element])
    named = [e for e in root.xpath(_NAMED_XPATH) if _named_abstract(e)]
    inner = set()
    for element in named:
        inner.update(a for a in element.iterancestors() if a in named)
    for element in sorted(named, key=lambda e: e in inner):  # innermost first, in page order
        field = f"body:{element.tag}{_name(element)}"
        text = _shown_text([element])
        following = element.getnext()
        if not text and following is not None and isinstance(following.tag, str):
            # An empty element marks the block after it (Acta Palaeontologica Polonica's
            # `<p id="abstract"><p>…</p></p>`, which the parser closes before the inner <p>).
            field, text = f"{field}+{following.tag}", _shown_text([following])
        yield field, text
    for heading in root.xpath(_HEADING_XPATH):
        if _ABSTRACT_LABEL.fullmatch(_normalized(heading.text_content())) and _is_own(heading):
            text = _text_after(heading)
            yield f'body:{heading.tag} "{_normalized(heading.text_content())}"', text


# Through the attribute axis, without translate(): ten times faster on a 350 KB page. The
# words are checked in Python (`_named_abstract`); "bstract" matches "Abstract" and "abstract".
_NAMED_XPATH = " | ".join(
    f"//body//@{attribute}[contains(., 'bstract') or contains(., 'BSTRACT')]/.."
    for attribute in ("id", "class")
)
_HEADING_XPATH = " | ".join(f"//body//{h}" for h in _HEADINGS)


def _named_abstract(element: HtmlElement) -> bool:
    """Whether the element's id or class names it the abstract, and it is the article's own."""
    if element.tag not in _CONTAINERS:
        return False
    words = _words(element)
    return (
        bool(words & _ABSTRACT_WORDS)
        and not words & (_BESIDE_WORDS | _LABEL_WORDS)
        and _is_own(element)
        and not _beside_by_label(element)
    )


def _name(element: HtmlElement) -> str:
    """`#id` or `.class` of the element: the one that names it the abstract."""
    element_id = element.get("id") or ""
    if _split(element_id) & _ABSTRACT_WORDS:
        return f"#{element_id}"
    token = next(t for t in (element.get("class") or "").split() if _split(t) & _ABSTRACT_WORDS)
    return f".{token}"


def _is_own(element: HtmlElement) -> bool:
    """Not inside the page's references or its related or recommended articles."""
    return not any(_words(e) & _OTHER_PAPERS_WORDS for e in (element, *element.iterancestors()))


def _beside_by_label(element: HtmlElement) -> bool:
    """Whether the block's own heading says it is Highlights, Keywords, … not the abstract."""
    first = next((child for child in element if isinstance(child.tag, str)), None)
    if first is None:
        return False
    if first.tag in _HEADINGS or _words(first) & _LABEL_WORDS:
        return bool(_BESIDE_LABEL.fullmatch(_label_text(first)))
    return False


def _text_after(heading: HtmlElement) -> str:
    """The text that follows the heading, up to the next heading of its level or above."""
    level = int(heading.tag[1])
    start = heading
    for _ in range(_HEADING_CLIMB + 1):
        parts = []
        if start.tail and start.tail.strip():
            parts.append(start.tail)
        for sibling in start.itersiblings():
            if _ends_section(sibling, level):
                break
            parts.append(sibling)
        text = _shown_text(parts)
        if text or start.getparent() is None:
            return text
        start = start.getparent()
    return ""


def _ends_section(element: HtmlElement, level: int) -> bool:
    if not isinstance(element.tag, str):
        return False
    headings = [element] if element.tag in _HEADINGS else element.iterdescendants(*_HEADINGS)
    return any(int(h.tag[1]) <= level for h in headings)


def _shown_text(parts: list[HtmlElement | str]) -> str:
    """The text of these elements (and loose text) as shown, without what is not the abstract."""
    lines = []
    for part in parts:
        if isinstance(part, str):
            lines.append(part)
            continue
        if not isinstance(part.tag, str):  # a comment between blocks
            lines.append(part.tail or "")
            continue
        copy = deepcopy(part)
        for heading in list(copy.iterdescendants(*_HEADINGS)):
            if _BESIDE_LABEL.fullmatch(_label_text(heading)):
                _drop_headed_run(heading, copy)
        for element in list(copy.iterdescendants()):
            if _left_out(element):
                element.drop_tree()  # keeps the text that follows it
        lines.append(_inner_text(copy) if not _left_out(copy) else "")
        lines.append(part.tail or "")
    return " ".join(" ".join(lines).split())


def _drop_headed_run(heading: HtmlElement, top: HtmlElement) -> None:
    """Leave out a heading that names a block beside the abstract and what follows it, up to
    the next heading (APS's "Physics Subject Headings (PhySH)" and their list of tags)."""
    block = heading
    label = _label_text(heading)
    while (parent := block.getparent()) is not None and parent is not top:
        if _label_text(parent) != label:
            break
        block = parent  # a wrapper around the heading alone
    for sibling in list(block.itersiblings()):
        if _ends_section(sibling, len(_HEADINGS)):
            break
        sibling.drop_tree()
    block.drop_tree()


def _label_text(element: HtmlElement) -> str:
    return _normalized(element.text_content()).rstrip(":")


def _left_out(element: HtmlElement) -> bool:
    if not isinstance(element.tag, str):
        return True  # comments and processing instructions
    if element.tag in _LEFT_OUT_TAGS or _words(element) & (_BESIDE_WORDS | _OTHER_PAPERS_WORDS):
        return True
    if _beside_by_label(element):
        return True
    # A control: a leaf whose whole text is "Show more", "Expand", …
    return len(element) == 0 and bool(_CONTROL_TEXT.fullmatch(_normalized(element.text_content())))


def _inner_text(element: HtmlElement) -> str:
    """The element's text with blocks on lines of their own, inline elements joined."""
    chunks: list[str] = []

    def walk(node: HtmlElement) -> None:
        block = node.tag in _BLOCKS
        if block:
            chunks.append("\n")
        chunks.append(node.text or "")
        for child in node:
            if isinstance(child.tag, str):
                walk(child)
            chunks.append(child.tail or "")
        if block:
            chunks.append("\n")

    walk(element)
    return "".join(chunks)


def _words(element: HtmlElement) -> set[str]:
    return _split(f"{element.get('id') or ''} {element.get('class') or ''}")


def _split(names: str) -> set[str]:
    """The words of ids and class names: `hlFld-Abstract` is hl, fld, abstract."""
    return {word.lower() for word in _WORD.findall(names)}


def _normalized(text: str) -> str:
    return " ".join(text.split())
