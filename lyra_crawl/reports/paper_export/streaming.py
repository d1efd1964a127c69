"""A task's, a batch's, one query's or a selection's papers through one export writer, a page
at a time: the store's next page is read while the writer formats the last, and nothing but a
page is held, so memory stays flat whatever the number of papers."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TextIO

from lyra_crawl.backends.protocols import ResultStore
from lyra_crawl.papers.facets import FacetFilter, keeps, paper_facets
from lyra_crawl.records import FoundPaper
from lyra_crawl.reports.paper_export.bibtex import BibtexWriter
from lyra_crawl.reports.paper_export.csljson import CslJsonWriter
from lyra_crawl.reports.paper_export.records import exported
from lyra_crawl.reports.paper_export.ris import RisWriter
from lyra_crawl.reports.paper_export.table import CsvWriter
from lyra_crawl.reports.paper_export.writer import PaperWriter

WRITERS: dict[str, Callable[[TextIO], PaperWriter]] = {
    "ris": RisWriter,
    "bibtex": BibtexWriter,
    "csljson": CslJsonWriter,
    "csv": CsvWriter,
}
PAGE_SIZE = 1000


@dataclass(frozen=True, kw_only=True)
class PaperScope:
    """Whose papers: a task's queries, a batch's, one query, or those a selection chose
    (exactly one is set)."""

    task_id: str | None = None
    batch_id: int | None = None
    query_id: int | None = None
    selection_id: int | None = None

    def __str__(self) -> str:
        if self.task_id is not None:
            return f"task {self.task_id!r}"
        if self.selection_id is not None:
            return f"selection {self.selection_id}"
        return f"batch {self.batch_id}" if self.batch_id is not None else f"query {self.query_id}"


async def export_papers(
    store: ResultStore,
    scope: PaperScope,
    facets: Sequence[FacetFilter],
    writer: PaperWriter,
    *,
    page_size: int = PAGE_SIZE,
) -> tuple[int, int]:
    """Write the papers of `scope` that `facets` keep, by id; returns (written, found)."""

    def page_after(after_id: int) -> asyncio.Future[list[FoundPaper]]:
        return asyncio.ensure_future(
            store.papers_found(
                task_id=scope.task_id,
                batch_id=scope.batch_id,
                query_id=scope.query_id,
                selection_id=scope.selection_id,
                after_id=after_id,
                limit=page_size,
            )
        )

    written = found = 0
    writer.start()
    coming = page_after(0)
    # Reading and writing papers makes no reference cycles: what a page allocates goes when the
    # page is written, and the cyclic collector's passes over the whole process (Scrapy's
    # modules and all) would cost a fifth of the time.
    collecting = gc.isenabled()
    gc.disable()
    try:
        while page := await coming:
            coming = page_after(page[-1].paper.id)
            kept = [exported(p) for p in page if not facets or keeps(facets, paper_facets(p.paper))]
            writer.write(kept)
            written, found = written + len(kept), found + len(page)
    finally:
        coming.cancel()
        if collecting:
            gc.enable()
    writer.finish()
    return written, found
