"""Papers as BibTeX, written by bibtexparser (v2): one entry per paper.

`@article` with a venue (`journal`), else `@misc`. Text fields are LaTeX: its special characters
are escaped, each in a group of its own (`{\\%}`, `{\\&}`, `{\\textbackslash}`, …), and braces
become `{\\textbraceleft}` and `{\\textbraceright}`, since BibTeX counts every brace, escaped or
not, to find a value's end.
Runs of characters LaTeX would join (`--`, ``` `` ```, `?``) are kept apart with `{}`. Letters of
every script stay as they are (UTF-8; biber, JabRef and Zotero read it). Values are on one line.
`url` and `doi` are verbatim fields: written as they are, but for the characters a BibTeX value
cannot hold raw (braces, a backslash, whitespace), percent-encoded. Authors are "Family, Given"
joined by "and"; a name BibTeX would not split right is braced whole. The arXiv id is `eprint`
(with `archiveprefix = {arXiv}`), the PMID `pmid`, the queries that found it `keywords`, and
where it came from `annote`, which reference managers import as a note and the standard
bibliography styles do not print.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import bibtexparser
from bibtexparser.model import Entry, Field
from bibtexparser.writer import BibtexFormat

from lyra_crawl.reports.paper_export.names import AuthorName
from lyra_crawl.reports.paper_export.records import ExportedPaper, joined, one_line
from lyra_crawl.reports.paper_export.writer import PaperWriter

# Each escape in braces of its own: BibTeX's name splitting (bibtexparser's too) then never
# reads a backslash sequence as part of a separator.
_LATEX = str.maketrans(
    {
        "\\": r"{\textbackslash}",
        "{": r"{\textbraceleft}",
        "}": r"{\textbraceright}",
        "$": r"{\$}",
        "&": r"{\&}",
        "%": r"{\%}",
        "#": r"{\#}",
        "_": r"{\_}",
        "~": r"{\textasciitilde}",
        "^": r"{\textasciicircum}",
    }
)
_ESCAPED = "".join(map(chr, _LATEX))
# A character LaTeX would make one with the next (--, ---, ``, '', ?`, !`, <<, >>).
_LIGATURE = re.compile(r"[-`'<>?!](?=[-`'<>])")
_LIGATURE_ENDS = "-`'<>"
_VERBATIM = str.maketrans({"{": "%7B", "}": "%7D", "\\": "%5C", " ": "%20"})
_NOT_VERBATIM = "".join(map(chr, _VERBATIM))
_FORMAT = BibtexFormat()
_FORMAT.indent = "  "
_FORMAT.block_separator = "\n"


class BibtexWriter(PaperWriter):
    def write(self, papers: Sequence[ExportedPaper]) -> None:
        library = bibtexparser.Library([entry(paper) for paper in papers])
        # Values come enclosed (`entry`): no middleware goes over every field again.
        text = bibtexparser.write_string(library, unparse_stack=(), bibtex_format=_FORMAT)
        if text:
            self.out.write(text + "\n")


def entry(paper: ExportedPaper) -> Entry:
    fields = {
        "title": latex(paper.title),
        "author": _authors(paper.authors),
        "year": paper.year and str(paper.year),
        "journal": paper.venue and latex(paper.venue),
        "doi": paper.doi and verbatim(paper.doi),
        "eprint": paper.arxiv_id and verbatim(paper.arxiv_id),
        "archiveprefix": paper.arxiv_id and "arXiv",
        "pmid": paper.pmid and verbatim(paper.pmid),
        "url": paper.url and verbatim(paper.url),
        "abstract": paper.abstract and latex(paper.abstract),
        "keywords": latex(joined(paper.keywords, ", ")),
        "annote": latex("; ".join(paper.provenance())),
    }
    return Entry(
        "article" if paper.venue else "misc",
        paper.key,
        [Field(name, _enclosed(name, value)) for name, value in fields.items() if value],
    )


def _enclosed(name: str, value: str) -> str:
    """`value` as written: a year BibTeX reads bare when it is a number, anything else in
    braces (every brace inside it is escaped, so the value ends at its own)."""
    return value if name == "year" and value.isdigit() else "{" + value + "}"


def latex(text: str) -> str:
    """`text` as LaTeX on one line: every special character escaped."""
    text = one_line(text)
    # Searched first (here and in `verbatim`): most text has nothing to escape, and translate's
    # setup alone costs more than the search of a title.
    if _holds_any(text, _ESCAPED):
        text = text.translate(_LATEX)
    return _LIGATURE.sub(_kept_apart, text) if _holds_any(text, _LIGATURE_ENDS) else text


def _holds_any(text: str, chars: str) -> bool:
    """Whether `text` holds any of `chars`: one quick search a character (memchr's), where a
    regex's class would test every character of the text against it (with the ligatures' search
    over every abstract, a sixth of a BibTeX export's time)."""
    return any(map(text.__contains__, chars))


def _kept_apart(ligature: re.Match[str]) -> str:
    return ligature[0] + "{}"


def verbatim(text: str) -> str:
    """`text` for a verbatim field (url, doi): the characters a value cannot hold raw encoded."""
    text = one_line(text)
    return text.translate(_VERBATIM) if _holds_any(text, _NOT_VERBATIM) else text


def _authors(names: Sequence[AuthorName]) -> str:
    # One pass over every name when none is literal: " and " and ", " between names and their
    # parts are nothing LaTeX escapes or joins.
    if any(name.literal for name in names):
        return " and ".join(map(_author, names))
    return latex(" and ".join(map(_von_last_jr_first, names)))


def _author(name: AuthorName) -> str:
    if name.literal:
        return "{" + latex(name.literal) + "}"
    return latex(_von_last_jr_first(name))


def _von_last_jr_first(name: AuthorName) -> str:
    parts = (
        (name.family_name, name.suffix, name.given)
        if name.suffix
        else (name.family_name, name.given)
    )
    return ", ".join(filter(None, parts))
