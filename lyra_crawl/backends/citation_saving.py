"""Saving one answer of a citation list: its papers into the paper index, then its edges. No SQL.

The papers go through the same save as a query's (backends.paper_saving.PapersSave), with two
differences:
- they link no query items: each paper's one "URL" is its position in the answer, so the store
  learns which row each went into (`rows_of_papers`);
- they leave the attribution of the rows they merge into as it was (`keep_attributions`):
  attribution says which kinds of search found a paper, and a citation list is none of them.
  A new row is `api_only`, as its records are.
Each paper at the other end then makes one edge with the fetched paper (`edges`): from it for a
list of references, to it for a list of citations; none to the fetched paper itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lyra_crawl.backends.paper_saving import PaperWrite
from lyra_crawl.backends.rows import Row
from lyra_crawl.papers.canonical import CanonicalPaper
from lyra_crawl.records import CitationFetch

_POSITION = "citation:"


def marked(papers: Sequence[CanonicalPaper]) -> list[tuple[CanonicalPaper, list[str]]]:
    """The papers as a save takes them, each "linking" its position."""
    return [(paper, [f"{_POSITION}{position}"]) for position, paper in enumerate(papers)]


def rows_of_papers(writes: Sequence[PaperWrite], paper_ids: Sequence[int]) -> list[int]:
    """The row each marked paper went into, in the papers' order."""
    found: dict[int, int] = {}
    for paper_id, write in zip(paper_ids, writes, strict=True):
        for url in write.urls:
            found[int(url.removeprefix(_POSITION))] = paper_id
    return [found[position] for position in range(len(found))]


def keep_attributions(writes: Iterable[PaperWrite], rows: Iterable[Row]) -> None:
    """Each stored row written keeps its own attribution (the rows a write joins, theirs)."""
    stored = {int(row["id"]): row["attribution"] for row in rows}
    for write in writes:
        if write.row_id is None:
            continue
        found = {stored[i] for i in (write.row_id, *write.absorbed) if stored.get(i)}
        if found:
            write.values["attribution"] = found.pop() if len(found) == 1 else "both"


def row_now(paper_id: int, writes: Sequence[PaperWrite], paper_ids: Sequence[int]) -> int:
    """The row a stored paper is after the save: another when the save merged it into one."""
    for kept, write in zip(paper_ids, writes, strict=True):
        if paper_id in write.absorbed:
            return kept
    return paper_id


def edges(fetch: CitationFetch, others: Iterable[int]) -> list[tuple[int, int]]:
    """(citing, cited) of each edge between the fetched paper and the papers its list names."""
    pairs = []
    for other in dict.fromkeys(others):
        if other != fetch.paper_id:
            pairs.append(
                (fetch.paper_id, other)
                if fetch.relation == "references"
                else (other, fetch.paper_id)
            )
    return pairs
