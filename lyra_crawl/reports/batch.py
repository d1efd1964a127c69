"""`scrapy report --batch ID`: one batch at a glance, as text (here) or one HTML page
(lyra_crawl.reports.batch_html).

Every figure is aggregated by the store over the batch's queries (GROUP BY, through indexes), so
a batch of 1,000 or 10,000 queries costs a handful of reads and no per-query record in memory:
entries by state, queries, pages, items, requests per engine and the batch's duration; stop
reasons counted across queries per source; block pages per engine and kind; quota use on the
UTC days the batch ran; requests per engine over time in buckets; novelty and harvest by page
number (mean and spread over the batch's pages); the first failed and rejected entries.
Requests are the pages fetched (one request each); pages a cache entry replayed are counted
apart and left out of the rates, which would count them twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from lyra_crawl.backends.protocols import BatchReports, Coordinator
from lyra_crawl.batch.progress import duration
from lyra_crawl.config import LyraConfig
from lyra_crawl.quoting import show
from lyra_crawl.records import (
    ENTRY_STATES,
    BatchEntry,
    BatchProgress,
    BatchRecord,
    BlockCount,
    DepthRates,
    Moments,
    RequestBucket,
    StopReasonCount,
)

# Time buckets of the requests-over-time figure: the smallest of these giving at most
# MAX_BUCKETS buckets over the batch's span.
BUCKET_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400)
MAX_BUCKETS = 60
# Failed and rejected entries listed by name; the rest are counted.
LISTED_ENTRIES = 20
# Days of quota use shown: the last ones the batch ran on.
QUOTA_DAYS = 7


@dataclass(frozen=True)
class DayQuota:
    """An engine's requests on one UTC day (every crawl's, as the quota counts them)."""

    day: str
    engine: str
    used: int
    daily_limit: int | None


@dataclass(frozen=True)
class DepthSummary:
    """Novelty and harvest at one page number over every source, and per source."""

    page_number: int
    pages: int
    novelty: Moments
    harvest: Moments
    by_source: Mapping[str, DepthRates]


@dataclass(frozen=True)
class BatchReport:
    record: BatchRecord
    progress: BatchProgress
    stop_reasons: list[StopReasonCount]
    blocks: list[BlockCount]
    quota: list[DayQuota]
    bucket_s: int
    requests_over_time: list[RequestBucket]
    depth: list[DepthSummary]
    listed_entries: list[BatchEntry]
    unsuccessful_entries: int
    now: datetime

    @property
    def started(self) -> datetime | None:
        return _instant(self.progress.started_at)

    @property
    def ended(self) -> datetime | None:
        """When the last entry finished; None while entries are pending or running."""
        if self.progress.count("pending") or self.progress.count("running"):
            return None
        return _instant(self.progress.finished_at)

    @property
    def duration_s(self) -> float | None:
        started = self.started
        if started is None:
            return None
        return ((self.ended or self.now) - started).total_seconds()

    @property
    def sources(self) -> list[str]:
        return sorted(self.progress.requests)


async def batch_report(
    store: BatchReports,
    coordinator: Coordinator,
    config: LyraConfig,
    batch_id: int,
    now: datetime,
) -> BatchReport | None:
    record = await store.batch(batch_id)
    if record is None:
        return None
    progress = await store.batch_progress(batch_id)
    started = _instant(progress.started_at)
    ended = _instant(progress.finished_at) or now
    bucket_s = bucket_width((ended - started).total_seconds() if started else 0.0)
    listed, unsuccessful = await store.batch_entries_in(
        batch_id, ("failed", "rejected"), limit=LISTED_ENTRIES
    )
    return BatchReport(
        record=record,
        progress=progress,
        stop_reasons=await store.batch_stop_reasons(batch_id),
        blocks=await store.batch_blocks(batch_id),
        quota=await _quota(coordinator, config, progress, days_between(started, ended)),
        bucket_s=bucket_s,
        requests_over_time=await store.batch_requests_over_time(batch_id, bucket_s),
        depth=depth_summary(await store.batch_depth_rates(batch_id)),
        listed_entries=listed,
        unsuccessful_entries=unsuccessful,
        now=now,
    )


def bucket_width(span_s: float) -> int:
    """The smallest step giving at most MAX_BUCKETS buckets over `span_s` seconds."""
    for step in BUCKET_STEPS_S:
        if span_s / step <= MAX_BUCKETS:
            return step
    return BUCKET_STEPS_S[-1]


def days_between(first: datetime | None, last: datetime) -> list[date]:
    """The UTC days from `first` to `last`, the last QUOTA_DAYS of them."""
    if first is None:
        return []
    days, day = [], first.date()
    while day <= last.date():
        days.append(day)
        day += timedelta(days=1)
    return days[-QUOTA_DAYS:]


async def _quota(
    coordinator: Coordinator, config: LyraConfig, progress: BatchProgress, days: Iterable[date]
) -> list[DayQuota]:
    """Per day: the engines the batch sent requests to, with every crawl's use that day."""
    quota = []
    for day in days:
        used = await coordinator.quota_used_on(day.isoformat())
        for engine in sorted(set(progress.requests) & set(used)):
            policy = config.policies.get(engine)
            quota.append(
                DayQuota(
                    day.isoformat(), engine, used[engine], policy.daily_limit if policy else None
                )
            )
    return quota


def depth_summary(rates: Sequence[DepthRates]) -> list[DepthSummary]:
    """Per page number: every source's moments added up, and each source's own."""
    by_page: dict[int, dict[str, DepthRates]] = defaultdict(dict)
    for rate in rates:
        by_page[rate.page_number][rate.source] = rate
    summary = []
    for page_number, sources in sorted(by_page.items()):
        summary.append(
            DepthSummary(
                page_number=page_number,
                pages=sum(rate.pages for rate in sources.values()),
                novelty=sum((rate.novelty for rate in sources.values()), Moments()),
                harvest=sum((rate.harvest for rate in sources.values()), Moments()),
                by_source=sources,
            )
        )
    return summary


def _instant(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


# -- text ------------------------------------------------------------------------------------


def spread(moments: Moments) -> str:
    """`0.83 ± 0.12`, or `-` without values."""
    if moments.mean is None or moments.sd is None:
        return "-"
    return f"{moments.mean:.2f} ± {moments.sd:.2f}"


def counted(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items()) or "-"


def entries_text(progress: BatchProgress) -> str:
    parts = []
    for state in ENTRY_STATES:
        text = f"{progress.count(state)} {state}"
        if state == "done" and progress.cached_entries:
            text += f" ({progress.cached_entries} answered by the cache)"
        parts.append(text)
    return ", ".join(parts)


def duration_text(report: BatchReport) -> str:
    seconds = report.duration_s
    if seconds is None:
        return "not started"
    since = report.started.isoformat(timespec="seconds") if report.started else "?"
    if report.ended is None:
        return f"running for {duration(seconds)} (since {since})"
    return f"{duration(seconds)} ({since} to {report.ended.isoformat(timespec='seconds')})"


def summary_rows(report: BatchReport) -> list[tuple[str, str]]:
    """The summary table: (what, figure)."""
    progress = report.progress
    pages = progress.total_requests + progress.replayed_pages
    return [
        ("entries", f"{progress.total_entries}: {entries_text(progress)}"),
        ("queries", str(progress.queries)),
        (
            "pages",
            f"{pages}: {progress.total_requests} requests, "
            f"{progress.replayed_pages} replayed from the cache",
        ),
        ("items", str(progress.items)),
        ("requests per engine", counted(progress.requests)),
        ("duration", duration_text(report)),
    ]


def stop_reason_rows(report: BatchReport) -> list[tuple[str, int, str]]:
    """(reason, queries, per source), most frequent first."""
    totals: dict[str, int] = defaultdict(int)
    sources: dict[str, dict[str, int]] = defaultdict(dict)
    for count in report.stop_reasons:
        totals[count.reason] += count.queries
        sources[count.reason][count.source] = count.queries
    return [
        (reason, total, counted(dict(sorted(sources[reason].items()))))
        for reason, total in sorted(totals.items(), key=lambda item: (-item[1], item[0]))
    ]


def bucket_label(start: int, bucket_s: int) -> str:
    """The bucket's start, UTC like every time the store keeps."""
    moment = datetime.fromtimestamp(start, UTC)
    return moment.strftime("%H:%M:%S" if bucket_s < 60 else "%m-%d %H:%M")


def entry_line(entry: BatchEntry) -> str:
    return f"entry {entry.position} {show(entry.query_text)}: {entry.state}: {entry.detail or '-'}"


def batch_report_text(report: BatchReport) -> str:
    record = report.record
    lines = [f"batch {record.id}: {record.source}, recorded {record.created_at}"]
    width = max(len(name) for name, _ in summary_rows(report))
    lines += [f"  {name.ljust(width)}  {figure}" for name, figure in summary_rows(report)]
    lines.append("stop reasons (queries, per source):")
    lines += [
        f"  {reason} {total}: {sources}" for reason, total, sources in stop_reason_rows(report)
    ] or ["  -"]
    lines.append("blocks (pages, per engine and kind):")
    lines += [f"  {b.engine} {b.kind} {b.pages}" for b in report.blocks] or ["  none"]
    lines.append("quota use (every crawl's requests that UTC day):")
    lines += [
        f"  {use.day} {use.engine} {use.used} "
        + (f"of {use.daily_limit}" if use.daily_limit is not None else "(no daily limit)")
        for use in report.quota
    ] or ["  -"]
    lines.append(f"requests per engine over time ({report.bucket_s} s buckets, UTC):")
    buckets: dict[int, dict[str, int]] = defaultdict(dict)
    for bucket in report.requests_over_time:
        buckets[bucket.start][bucket.engine] = bucket.requests
    lines += [
        f"  {bucket_label(start, report.bucket_s)}  {sum(counts.values())}: {counted(counts)}"
        for start, counts in sorted(buckets.items())
    ] or ["  -"]
    lines.append("novelty and harvest by page (mean ± spread over pages, cache replays left out):")
    lines += [
        f"  page {row.page_number}: {row.pages} pages, novelty {spread(row.novelty)}, "
        f"harvest {spread(row.harvest)}"
        for row in report.depth
    ] or ["  -"]
    if report.unsuccessful_entries:
        shown = len(report.listed_entries)
        lines.append(
            f"failed and rejected entries ({shown} of {report.unsuccessful_entries} shown):"
        )
        lines += [f"  {entry_line(entry)}" for entry in report.listed_entries]
    return "\n".join(lines)
