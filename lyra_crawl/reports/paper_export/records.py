"""A canonical paper as every export format reads it: `ExportedPaper`. Pure.

Made from what the store found (`FoundPaper`): the paper's own fields, the texts of the queries
that found it as its keywords, and where it came from (its sources, attribution and first rank)
as the lines of a note. Its citation key is the same in every format and every run: the first
author's family name, the year and the title's first word (in ASCII letters, lower case), then
the paper's id in the store, which alone makes it unique ("smith2020coastal-1234").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

from lyra_crawl.records import FoundPaper
from lyra_crawl.reports.paper_export.names import AuthorName, author_name

# The kinds of a paper's URLs (lyra_crawl.papers.evidence), in the order a reader wants one:
# the publisher's page first, a PDF last.
URL_KINDS = ("landing", "doi", "arxiv", "pubmed", "result", "pdf")
# Title words a citation key skips.
_KEY_STOPWORDS = frozenset({"a", "an", "and", "for", "from", "in", "of", "on", "the", "to", "with"})
_NOT_KEY = re.compile("[^a-z0-9]")
# Control characters no format carries well (a stray one makes some readers drop the file).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


class ExportedPaper(NamedTuple):
    """One canonical paper to export. Text is free of control characters; `keywords` are the
    texts of the queries that found it; `first_rank` its best place among their results."""

    paper_id: int
    key: str
    title: str
    authors: tuple[AuthorName, ...]
    year: int | None
    venue: str | None
    doi: str | None
    arxiv_id: str | None
    pmid: str | None
    url: str | None
    abstract: str | None
    keywords: tuple[str, ...]
    sources: tuple[str, ...]
    attribution: str
    evidence: str | None
    first_rank: int | None

    def provenance(self) -> list[str]:
        """Where the paper came from, one "name: value" line each."""
        lines = [f"sources: {', '.join(self.sources)}"] if self.sources else []
        lines.append(f"attribution: {self.attribution}")
        if self.first_rank is not None:
            lines.append(f"first rank: {self.first_rank}")
        return lines


def exported(found: FoundPaper) -> ExportedPaper:
    paper = found.paper
    title = clean(paper.title)
    names = paper.authors if "".join(paper.authors).isprintable() else map(clean, paper.authors)
    authors = tuple([author_name(name) for name in names if name and not name.isspace()])
    return ExportedPaper(
        paper_id=paper.id,
        key=citation_key(paper.id, authors, paper.year, title),
        title=title,
        authors=authors,
        year=paper.year,
        venue=clean_or_none(paper.venue),
        doi=clean_or_none(paper.doi),
        arxiv_id=clean_or_none(paper.arxiv_id),
        pmid=clean_or_none(paper.pmid),
        url=clean_or_none(
            next((paper.fetch_urls[k] for k in URL_KINDS if k in paper.fetch_urls), None)
        ),
        abstract=clean_or_none(paper.abstract),
        keywords=tuple(map(clean, found.queries)),
        sources=paper.sources,
        attribution=paper.attribution,
        evidence=paper.evidence,
        first_rank=found.first_rank,
    )


def clean(text: str) -> str:
    """`text` without control characters (tabs and line breaks stay)."""
    # isprintable() is true of most text and far quicker than any scan for what is not.
    return text if text.isprintable() else _CONTROL.sub("", text)


def clean_or_none(text: str | None) -> str | None:
    """`text` cleaned; None when nothing but whitespace is left."""
    if text is None:
        return None
    cleaned = clean(text)
    return cleaned if cleaned.strip() else None


def one_line(text: str) -> str:
    """`text` on one line: every run of whitespace (line breaks too) one space."""
    if text.isprintable():
        # Its only whitespace is the space (every other kind is unprintable): runs of spaces
        # folded in place, without a string a word as split() makes.
        while "  " in text:
            text = text.replace("  ", " ")
        return text.strip(" ")
    return " ".join(text.split())


def joined(values: Iterable[str], separator: str) -> str:
    """`values` on one line, joined by `separator` (", " or "; "): its first character inside
    a value becomes a space, so the list reads back as it was."""
    mark = separator[0]
    return separator.join(one_line(value.replace(mark, " ")) for value in values)


def citation_key(
    paper_id: int, authors: tuple[AuthorName, ...], year: int | None, title: str
) -> str:
    first_author = (authors[0].family or authors[0].literal).split() if authors else ()
    family = _ascii_word(first_author[0]) if first_author else ""
    word = next(
        (w for w in map(_ascii_word, title.split()) if len(w) > 2 and w not in _KEY_STOPWORDS),
        "",
    )
    stem = f"{family}{year or ''}{word}" or "paper"
    return f"{stem}-{paper_id}"


def _ascii_word(text: str) -> str:
    """The ASCII letters and digits of `text`, accents dropped, in lower case."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _NOT_KEY.sub("", text.lower())
