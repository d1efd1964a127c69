"""The live table of a batch's progress on a terminal, drawn with rich and redrawn in place.

Entries by state with a bar, then per engine the requests, rate-limit waits and blocks, then
items, elapsed time and the ETA. Log records and prints that arrive while it is up are written
above it (rich's own redirection; the logging handlers that wrote to the terminal are pointed at
it meanwhile), so nothing garbles it. Only lyra_crawl.batch.display loads this module, and only
on a terminal: crawls whose progress goes to a log never import rich.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from lyra_crawl.batch.progress import ProgressFigures, duration, eta_text
from lyra_crawl.records import ENTRY_STATES

STATE_STYLES = {
    "done": "green",
    "running": "cyan",
    "pending": "white",
    "failed": "red",
    "rejected": "magenta",
}


def progress_view(figures: ProgressFigures) -> RenderableType:
    """The live table: entries with a bar, requests / waits / blocks per engine, the ETA."""
    counts = figures.counts
    to_run = counts.total_entries - counts.count("rejected")
    over = counts.count("done") + counts.count("failed")
    title = Text.assemble(
        (f"batch {counts.batch_id}", "bold"),
        f"  {over} of {to_run} entries over  ·  elapsed {duration(figures.elapsed_s)}  ·  ",
        (eta_text(figures), "bold"),
    )
    entries = Table.grid(padding=(0, 2))
    for _ in ENTRY_STATES:
        entries.add_column(justify="right")
    entries.add_row(*(Text(f"{s} {counts.count(s)}", style=STATE_STYLES[s]) for s in ENTRY_STATES))
    engines = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
    engines.add_column("engine")
    for heading in ("requests", "rate waits", "blocks"):
        engines.add_column(heading, justify="right")
    waits = figures.waits
    for engine in figures.engines:
        engines.add_row(
            engine,
            str(counts.requests.get(engine, 0)),
            str(waits.get(engine, 0)),
            str(counts.blocks.get(engine, 0)),
        )
    engines.add_row(
        Text("total", style="bold"),
        str(counts.total_requests),
        str(sum(waits.values())),
        str(sum(counts.blocks.values())),
    )
    replayed = counts.replayed_pages
    totals = Text(
        f"{counts.items} items stored, {counts.queries} queries"
        + (f", {replayed} pages replayed from the cache" if replayed else "")
    )
    bar = Table.grid(padding=(0, 1))
    bar.add_row(
        ProgressBar(total=max(to_run, 1), completed=over, width=60),
        f"{100 * over // max(to_run, 1)}%",
    )
    return Group(title, bar, entries, engines, totals)


class LiveTable:
    """The table on `stream`, shown from its first figures until `stop`."""

    def __init__(self, stream: TextIO, figures: ProgressFigures) -> None:
        self._live = Live(
            progress_view(figures),
            console=Console(file=stream),
            auto_refresh=False,  # redrawn by `update`: no thread of its own
            redirect_stdout=True,
            redirect_stderr=True,
        )
        terminal = {id(stream), id(sys.stdout), id(sys.stderr)}
        self._live.start(refresh=True)
        # Logging handlers hold the stream they were made with, not sys.stderr: point those
        # that write to the terminal at Live's proxy so records print above the table.
        self._handlers: list[tuple[logging.StreamHandler[TextIO], TextIO]] = []
        for handler in logging.getLogger().handlers:
            if type(handler) is logging.StreamHandler and id(handler.stream) in terminal:
                self._handlers.append((handler, handler.stream))
                handler.setStream(sys.stderr)

    def update(self, figures: ProgressFigures) -> None:
        self._live.update(progress_view(figures), refresh=True)

    def stop(self) -> None:
        """End the table and give the logging handlers their streams back."""
        self._live.stop()
        for handler, stream in self._handlers:
            handler.setStream(stream)
        self._handlers = []
