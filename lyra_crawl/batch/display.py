"""Showing a batch's progress: a live table on a terminal, plain lines anywhere else.

On a terminal (the stream is a TTY) a rich `Live` table is redrawn in place every
LIVE_REFRESH_S: entries by state with a bar, then per engine the requests, rate-limit waits
and blocks, then items, elapsed time and the ETA. Log records and prints that arrive meanwhile
are written above the table (rich's own redirection; the logging handlers that wrote to the
terminal are pointed at it while the table is up), so nothing garbles it. Anywhere else
(Scrapyd job logs, cron, a pipe) one line (lyra_crawl.batch.progress.progress_line) every
LYRA_PROGRESS_INTERVAL seconds, handed to `emit`. Either way `close` shows the final figures.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from lyra_crawl.batch.progress import ProgressFigures, duration, eta_text, progress_line
from lyra_crawl.records import ENTRY_STATES

# Seconds between two redraws of the live table (one aggregate read of the store each).
LIVE_REFRESH_S = 1.0
# Reads of the figures take at most this share of the time: a batch so large that one read
# takes 50 ms (about 40,000 pages) is redrawn every second, one of 200 ms every 4 s.
READ_SHARE = 0.05
DEFAULT_INTERVAL_S = 30.0
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


class ProgressDisplay:
    """Shows progress figures on `stream` (default stderr): live on a TTY, else lines.

    The caller reads new figures when `due()` and hands them to `show`; `close` shows the last
    ones and gives the terminal back.
    """

    def __init__(
        self,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        emit: Callable[[str], None],
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.live = _is_terminal(self.stream)
        self.refresh_s = min(LIVE_REFRESH_S, interval_s) if self.live else interval_s
        self._emit = emit
        self._clock = clock
        self._asked_at: float | None = None
        self._live: Live | None = None
        self._handlers: list[tuple[logging.StreamHandler[TextIO], TextIO]] = []

    def due(self, read_s: float = 0.0) -> bool:
        """Whether to read and show new figures now, given that one read takes `read_s`;
        True starts the next period (a tick a hair early still counts)."""
        now = self._clock()
        wanted = max(self.refresh_s, read_s / READ_SHARE)
        if self._asked_at is not None and now - self._asked_at < wanted * 0.99:
            return False
        self._asked_at = now
        return True

    def show(self, figures: ProgressFigures) -> None:
        if not self.live:
            self._emit(progress_line(figures))
        elif self._live is None:
            self._start(figures)
        else:
            self._live.update(progress_view(figures), refresh=True)

    def close(self, figures: ProgressFigures | None) -> None:
        """Show the final figures (when there are any) and end the live table."""
        if figures is not None:
            self.show(figures)
        if self._live is not None:
            self._live.stop()
            self._live = None
            for handler, stream in self._handlers:
                handler.setStream(stream)
            self._handlers = []

    def _start(self, figures: ProgressFigures) -> None:
        console = Console(file=self.stream)
        self._live = Live(
            progress_view(figures),
            console=console,
            auto_refresh=False,  # redrawn by `show`: no thread of its own
            redirect_stdout=True,
            redirect_stderr=True,
        )
        terminal = {id(self.stream), id(sys.stdout), id(sys.stderr)}
        self._live.start(refresh=True)
        # Logging handlers hold the stream they were made with, not sys.stderr: point those
        # that write to the terminal at Live's proxy so records print above the table.
        for handler in logging.getLogger().handlers:
            if type(handler) is logging.StreamHandler and id(handler.stream) in terminal:
                self._handlers.append((handler, handler.stream))
                handler.setStream(sys.stderr)


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
