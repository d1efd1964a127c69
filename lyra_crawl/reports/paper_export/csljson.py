"""Papers as CSL-JSON, the input data of Citation Style Language processors (citeproc-js in
Zotero and Mendeley, pandoc, citeproc-py), per its schema (csl-data.json, v1.0.2).

A JSON array, one item per line. `type` is article-journal with a venue (`container-title`),
else article; `id` and `citation-key` are the citation key. Authors are name objects (family,
given, non-dropping-particle, suffix; an organisation's name is `literal`); the year is `issued`'s
first date part. DOI, PMID, URL and abstract have fields of their own; `keyword` is the queries
that found the paper, separated by ", "; `note` holds the arXiv id and where the paper came from,
one "name: value" line each (Zotero reads "arXiv: …" lines there). Text is as stored: JSON carries
every character, line breaks of an abstract too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lyra_crawl.reports.paper_export.names import AuthorName
from lyra_crawl.reports.paper_export.records import ExportedPaper, joined
from lyra_crawl.reports.paper_export.writer import PaperWriter


class CslJsonWriter(PaperWriter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._separator = "\n"

    def start(self) -> None:
        self.out.write("[")

    def write(self, papers: Sequence[ExportedPaper]) -> None:
        for paper in papers:
            self.out.write(self._separator)
            self.out.write(json.dumps(item(paper), ensure_ascii=False))
            self._separator = ",\n"

    def finish(self) -> None:
        self.out.write("\n]\n")


def item(paper: ExportedPaper) -> dict[str, Any]:
    """The paper as a CSL data item."""
    note = [f"arXiv: {paper.arxiv_id}"] if paper.arxiv_id else []
    fields: dict[str, Any] = {
        "id": paper.key,
        "type": "article-journal" if paper.venue else "article",
        "citation-key": paper.key,
        "title": paper.title,
        "author": [_name(author) for author in paper.authors],
        "issued": {"date-parts": [[paper.year]]} if paper.year else None,
        "container-title": paper.venue,
        "DOI": paper.doi,
        "PMID": paper.pmid,
        "URL": paper.url,
        "abstract": paper.abstract,
        "keyword": joined(paper.keywords, ", "),
        "note": "\n".join([*note, *paper.provenance()]),
    }
    return {name: value for name, value in fields.items() if value}


def _name(name: AuthorName) -> dict[str, str]:
    if name.literal:
        return {"literal": name.literal}
    parts = {
        "family": name.family,
        "given": name.given,
        "non-dropping-particle": name.particle,
        "suffix": name.suffix,
    }
    return {part: value for part, value in parts.items() if value}
