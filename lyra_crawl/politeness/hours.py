"""An engine's allowed hours: UTC windows such as "01:00-06:00", "22:00-02:00". Pure.

A window includes its start and excludes its end; one whose end is earlier than its start
runs over midnight. An engine without windows is allowed at any hour.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, time

from lyra_crawl.quoting import show

_WINDOW = re.compile(r"^\s*([01]\d|2[0-3]):([0-5]\d)\s*-\s*([01]\d|2[0-4]):([0-5]\d)\s*$")


@dataclass(frozen=True)
class HourWindow:
    start: time
    end: time  # time.max stands for 24:00

    def __str__(self) -> str:
        end = "24:00" if self.end == time.max else f"{self.end:%H:%M}"
        return f"{self.start:%H:%M}-{end}"

    def contains(self, moment: time) -> bool:
        if self.start <= self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


def parse_window(text: str) -> HourWindow:
    """ "HH:MM-HH:MM" as a window; ValueError naming the expected form otherwise."""
    match = _WINDOW.match(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"expected a UTC window such as '01:00-06:00' (got {show(text)})")
    start_h, start_m, end_h, end_m = (int(part) for part in match.groups())
    if end_h == 24 and end_m:
        raise ValueError(f"a window ends at 24:00 at the latest (got {show(text)})")
    end = time.max if end_h == 24 else time(end_h, end_m)
    window = HourWindow(time(start_h, start_m), end)
    if window.start == window.end:
        raise ValueError(f"a window needs a start before its end (got {show(text)})")
    return window


def allowed_at(windows: Sequence[HourWindow], moment: datetime) -> bool:
    """Whether `moment` (UTC) falls in one of `windows`; no windows: always."""
    if not windows:
        return True
    clock = moment.time().replace(tzinfo=None)
    return any(window.contains(clock) for window in windows)


def describe(windows: Sequence[HourWindow]) -> str:
    return ", ".join(str(window) for window in windows) + " UTC"
