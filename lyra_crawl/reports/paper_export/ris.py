"""Papers as RIS, written by rispy: one reference per paper, each tag on its own line.

RIS's line rules: a value is one line (line breaks and runs of whitespace in an abstract become
one space), and a repeated tag (AU, KW, N1, UR) is one line per value. rispy reads UR as a list
separated by ";", so a ";" in a URL is written %3B (the same URL). Tags: TY (JOUR with a venue,
else GEN), ID (the citation key), TI, AU ("Family, Given", RIS's form), PY, T2 (the venue), DO,
UR, AB, KW (the queries that found it), N1 (the arXiv id, the PMID, and where it came from: RIS
has no tag of its own for either id, and Zotero reads "arXiv: …" and "PMID: …" note lines).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

import rispy

from lyra_crawl.reports.paper_export.records import ExportedPaper, one_line
from lyra_crawl.reports.paper_export.writer import PaperWriter


class _Writer(rispy.RisWriter):
    # rispy numbers each reference on a line of its own before TY; other readers want nothing
    # there.
    def set_header(self, count: int) -> str:
        return ""

    # rispy's line, its PATTERN "{tag}  - {value}", as an f-string: str.format once a line was
    # a fifteenth of the export's time.
    def _format_line(self, tag: str, value: object = "") -> str:
        return f"{tag}  - {value}"


class RisWriter(PaperWriter):
    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        self._rispy = _Writer()

    def write(self, papers: Sequence[ExportedPaper]) -> None:
        if papers:
            # rispy puts an empty line between the references it is given, and ends the text
            # with a line break; one more ends them. One write a page, not one a line.
            self.out.write(self._rispy.formats([reference(paper) for paper in papers]) + "\n")


def reference(paper: ExportedPaper) -> dict[str, Any]:
    """The paper as rispy's reference: its field names, values on one line each."""
    notes = [f"arXiv: {paper.arxiv_id}"] if paper.arxiv_id else []
    notes += [f"PMID: {paper.pmid}"] if paper.pmid else []
    fields: dict[str, Any] = {
        "type_of_reference": "JOUR" if paper.venue else "GEN",
        "id": paper.key,
        "title": paper.title,
        "authors": [author.inverted() for author in paper.authors],
        "year": paper.year and str(paper.year),
        "secondary_title": paper.venue,
        "doi": paper.doi,
        "urls": [paper.url.replace(";", "%3B")] if paper.url else [],
        "abstract": paper.abstract,
        "keywords": list(paper.keywords),
        "notes": [*notes, *paper.provenance()],
    }
    reference: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, list):
            value = [line for line in map(one_line, value) if line]
        elif value:
            value = one_line(value)
        if value:
            reference[name] = value
    return reference
