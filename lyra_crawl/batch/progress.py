"""A running batch's progress: the figures, the time left, and the plain progress line.

The figures come from the store (`BatchReports.batch_progress`: entries by state, requests per
source, items, blocks, and the rate-limit waits each crawl of the batch records from its
`lyra/<engine>/rate/waits` stats as it runs), so a batch running in this process, in several
(`--processes`) and as Scrapyd jobs are shown alike. `BatchMonitor` reads them once per tick;
lyra_crawl.batch.display shows them (a live table on a terminal, else these lines) and
lyra_crawl.batch.extension drives it inside a crawl. No Scrapy here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lyra_crawl.backends.protocols import BatchReports
from lyra_crawl.config import LyraConfig
from lyra_crawl.records import ENTRY_STATES, BatchProgress

# Where the ETA's pace comes from.
QPS_PACE = "qps"
OBSERVED_PACE = "observed"


@dataclass(frozen=True)
class Pace:
    """Requests per second the ETA assumes, where that figure comes from, and, for engines.yaml
    qps, the engine whose work left takes longest (the one that bounds the batch)."""

    requests_per_s: float
    source: str
    engine: str | None = None


@dataclass(frozen=True)
class ProgressFigures:
    counts: BatchProgress
    elapsed_s: float
    eta_s: float | None
    pace: Pace | None

    @property
    def waits(self) -> Mapping[str, int]:
        """Rate-limit waits per engine, as the batch's crawls recorded them."""
        return self.counts.rate_waits

    @property
    def engines(self) -> list[str]:
        """Every engine with requests, blocks or waits, by name."""
        return sorted(set(self.counts.requests) | set(self.counts.blocks) | set(self.waits))


def remaining_requests(counts: BatchProgress) -> dict[str, float] | None:
    """Requests each engine still has to answer: the entries not finished × the mean requests
    it answered per entry a crawl finished, less those the running entries already had from
    it. None until an entry has finished (before that nothing says how deep queries go)."""
    if counts.crawled_entries <= 0:
        return None
    left = counts.count("pending") + counts.count("running")
    return {
        engine: max(left * pages / counts.crawled_entries - counts.running_pages.get(engine, 0), 0)
        for engine, pages in counts.finished_pages.items()
    }


def eta_at_qps(counts: BatchProgress, qps: Mapping[str, float]) -> tuple[float | None, Pace | None]:
    """Seconds left at the engines' qps, and the engine that bounds them.

    Why this estimate: a polite batch is bounded by the engines, not by this machine. Each
    engine answers at most `qps` requests a second (engines.yaml), shared by every query of the
    batch, so the time left is the work left at the engines' pace. The work left comes from
    what finished entries needed (their depth varies with stop rules, blocks and quotas), which
    holds from the first finished entry on; a wall-clock extrapolation from the first minutes
    would count the start-up and swing as engines come and go. It is reckoned per engine and
    the slowest one bounds the batch: the SERP engines share the entries out by their free
    capacity, so for them this comes to their requests left ÷ Σ of their qps, while every
    query also waits for each of its API sources at that API's own qps.
    """
    left = remaining_requests(counts)
    if left is None:
        return None, None
    times = {engine: n / qps[engine] for engine, n in left.items() if n and qps.get(engine)}
    if not times:
        return (0.0 if not any(left.values()) else None), None
    slowest = max(times, key=lambda engine: times[engine])
    return times[slowest], Pace(qps[slowest], QPS_PACE, slowest)


def eta_at_pace(counts: BatchProgress, pace: Pace | None) -> float | None:
    """Seconds left at an observed pace (the rate limit is off: qps bounds nothing)."""
    left = remaining_requests(counts)
    if left is None:
        return None
    total = sum(left.values())
    if not total:
        return 0.0
    return total / pace.requests_per_s if pace is not None else None


def progress_line(figures: ProgressFigures) -> str:
    """The progress in one line: for logs (Scrapyd jobs, cron) and non-terminal output."""
    counts = figures.counts
    entries = ", ".join(f"{counts.count(state)} {state}" for state in ENTRY_STATES[1:])
    parts = [
        f"batch {counts.batch_id}: {counts.count('done')} of {counts.total_entries} entries "
        f"done, {entries}",
        f"{counts.total_requests} requests ({per_engine(counts.requests)})",
        f"{counts.items} items",
        f"blocks {per_engine(counts.blocks)}",
    ]
    parts.append(f"rate waits {per_engine(figures.waits)}")
    parts.append(f"elapsed {duration(figures.elapsed_s)}, {eta_text(figures)}")
    return "; ".join(parts)


def per_engine(counts: Mapping[str, int]) -> str:
    shown = {engine: n for engine, n in sorted(counts.items()) if n}
    return ", ".join(f"{engine} {n}" for engine, n in shown.items()) or "none"


def eta_text(figures: ProgressFigures) -> str:
    if figures.eta_s is None:
        return "ETA unknown"
    text = f"ETA {duration(figures.eta_s)}"
    pace = figures.pace
    if pace is not None and figures.eta_s > 0:
        if pace.source == QPS_PACE:
            text += f" ({pace.engine} at {pace.requests_per_s:g} requests/s bounds it)"
        else:
            text += f" (at the observed {pace.requests_per_s:.1f} requests/s)"
    return text


def duration(seconds: float) -> str:
    """1h02m, 3m05s, 42s."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class BatchMonitor:
    """Reads a batch's figures from the store, one aggregate read per call.

    `rate_limited`: whether the crawl paces engines at their qps (LYRA_RATE_LIMIT_ENABLED).
    When it does not (the simulator), their qps bounds nothing and the ETA takes the pace seen
    since the monitor's first read instead.
    """

    def __init__(
        self,
        batch_id: int,
        config: LyraConfig,
        *,
        rate_limited: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batch_id = batch_id
        self.qps = {name: policy.qps for name, policy in config.policies.items()}
        self.rate_limited = rate_limited
        self._clock = clock
        self._started = clock()
        # The requests already stored at the first read, and when: the observed pace's origin.
        self._first: tuple[int, float] | None = None
        # How long the last read of the store took (the display spaces its reads by it).
        self.read_s = 0.0

    async def figures(self, store: BatchReports) -> ProgressFigures:
        asked = self._clock()
        counts = await store.batch_progress(self.batch_id)
        now = self._clock()
        self.read_s = now - asked
        if self._first is None:
            self._first = (counts.total_requests, now)
        if self.rate_limited:
            seconds, pace = eta_at_qps(counts, self.qps)
        else:
            seen, spent = counts.total_requests - self._first[0], now - self._first[1]
            pace = Pace(seen / spent, OBSERVED_PACE) if seen and spent > 0 else None
            seconds = eta_at_pace(counts, pace)
        return ProgressFigures(
            counts=counts, elapsed_s=now - self._started, eta_s=seconds, pace=pace
        )
