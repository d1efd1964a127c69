"""Showing a batch's progress: a live table on a terminal, plain lines anywhere else.

On a terminal (the stream is a TTY) the live table (lyra_crawl.batch.live_table, imported only
then: rich is loaded by no other process) is redrawn in place every LIVE_REFRESH_S. Anywhere
else (Scrapyd job logs, cron, a pipe) one line (lyra_crawl.batch.progress.progress_line) every
LYRA_PROGRESS_INTERVAL seconds, handed to `emit`. Either way `close` shows the final figures.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from lyra_crawl.batch.progress import ProgressFigures, progress_line

if TYPE_CHECKING:
    from lyra_crawl.batch.live_table import LiveTable

# Seconds between two redraws of the live table (one aggregate read of the store each).
LIVE_REFRESH_S = 1.0
# Reads of the figures take at most this share of the time: a batch so large that one read
# takes 50 ms (about 40,000 pages) is redrawn every second, one of 200 ms every 4 s.
READ_SHARE = 0.05
DEFAULT_INTERVAL_S = 30.0


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
        self._table: LiveTable | None = None

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
        elif self._table is None:
            from lyra_crawl.batch.live_table import LiveTable

            self._table = LiveTable(self.stream, figures)
        else:
            self._table.update(figures)

    def close(self, figures: ProgressFigures | None) -> None:
        """Show the final figures (when there are any) and end the live table."""
        if figures is not None:
            self.show(figures)
        if self._table is not None:
            self._table.stop()
            self._table = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
