"""What every export format's writer does: take papers a page at a time, write them to a text
stream as they come (nothing held but the page). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from lyra_crawl.reports.paper_export.records import ExportedPaper


class PaperWriter:
    """Writes papers to `out`: `start()`, `write(page)` for each page, `finish()`."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def start(self) -> None:
        """What comes before the first paper (nothing, unless a format has a header)."""

    def write(self, papers: Sequence[ExportedPaper]) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """What comes after the last paper."""
