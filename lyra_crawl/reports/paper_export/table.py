"""Papers as CSV: one row per paper, the columns ASReview and spreadsheets read by name.

`title`, `abstract`, `authors`, `keywords`, `year`, `doi`, `url` are the names ASReview takes;
beside them the citation key, the paper's id in the store, its venue, arXiv id and PMID, and where
it came from (`sources`, `attribution`, `evidence`, `first_rank`). Lists are joined by "; "
(authors "Family, Given", keywords the queries that found it). Text is as stored: a field with a
comma, a quote or a line break is quoted, as RFC 4180 says.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence

from lyra_crawl.reports.paper_export.records import ExportedPaper, joined
from lyra_crawl.reports.paper_export.writer import PaperWriter

COLUMNS = (
    "key",
    "paper_id",
    "title",
    "authors",
    "year",
    "venue",
    "doi",
    "arxiv_id",
    "pmid",
    "url",
    "abstract",
    "keywords",
    "sources",
    "attribution",
    "evidence",
    "first_rank",
)


class CsvWriter(PaperWriter):
    def start(self) -> None:
        self._rows = csv.writer(self.out, lineterminator="\n")
        self._rows.writerow(COLUMNS)

    def write(self, papers: Sequence[ExportedPaper]) -> None:
        self._rows.writerows(map(row, papers))


def row(paper: ExportedPaper) -> list[object]:
    values = {
        "key": paper.key,
        "paper_id": paper.paper_id,
        "title": paper.title,
        "authors": joined((author.inverted() for author in paper.authors), "; "),
        "year": paper.year,
        "venue": paper.venue,
        "doi": paper.doi,
        "arxiv_id": paper.arxiv_id,
        "pmid": paper.pmid,
        "url": paper.url,
        "abstract": paper.abstract,
        "keywords": joined(paper.keywords, "; "),
        "sources": "; ".join(paper.sources),
        "attribution": paper.attribution,
        "evidence": paper.evidence,
        "first_rank": paper.first_rank,
    }
    return ["" if values[column] is None else values[column] for column in COLUMNS]
