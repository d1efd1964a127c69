"""`scrapy report --batch ID --html FILE`: one batch at a glance on one self-contained page.

Tables: the summary, requests and blocks per engine, stop reasons, quota use, novelty and
harvest per page number, the first failed and rejected entries. Three plots, whatever the
batch's size: requests per engine over time (stacked, per second, in time buckets), and
novelty and harvest by page number (the mean over every page with its spread, one standard
deviation, shaded, and each source's mean as a thin line). Plots are inline SVG, nothing is
loaded from elsewhere. With --per-query the per-query table and plots of `scrapy report`
follow. The page is templates/batch.html (see lyra_crawl.reports.html).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup
from matplotlib import colormaps
from matplotlib.figure import Figure

from lyra_crawl.reports.batch import (
    BatchReport,
    entry_line,
    spread,
    stop_reason_rows,
    summary_rows,
)
from lyra_crawl.reports.html import query_context, render, svg
from lyra_crawl.reports.text import QueryReport, QuotaUse


def _colors(names: Sequence[str]) -> dict[str, Any]:
    """A colour per source, the same in every plot: tab10's distinct hues up to ten sources,
    tab20 (pairs of light and dark) beyond."""
    palette = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: palette(i % palette.N) for i, name in enumerate(sorted(names))}


def requests_plot(report: BatchReport) -> Markup:
    """Requests per second per engine, stacked, over the batch's time buckets."""
    figure = Figure(figsize=(11, 3.6))
    axes = figure.subplots()
    width = report.bucket_s
    starts = sorted({bucket.start for bucket in report.requests_over_time})
    per_engine: dict[str, dict[int, int]] = defaultdict(dict)
    for bucket in report.requests_over_time:
        per_engine[bucket.engine][bucket.start] = bucket.requests
    if starts:
        origin = starts[0]
        buckets = range(origin, starts[-1] + width, width)
        engines = sorted(per_engine)
        colors = _colors(report.sources or engines)
        rates = [[per_engine[e].get(start, 0) / width for start in buckets] for e in engines]
        # Drawn as steps from each bucket's start; the last step ends where its bucket does.
        axes.stackplot(
            [(start - origin) / 60 for start in [*buckets, buckets[-1] + width]],
            [[*per_second, per_second[-1]] for per_second in rates],
            labels=engines,
            colors=[colors.get(e, "#999") for e in engines],
            step="post",
            alpha=0.85,
        )
        started = datetime.fromtimestamp(origin, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        axes.set_xlabel(f"minutes from {started} ({width} s buckets)")
        axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small", frameon=False)
    else:
        axes.text(0.5, 0.5, "no requests", ha="center", va="center", transform=axes.transAxes)
    axes.set_ylabel("requests / s")
    axes.set_title("requests per engine over time (stacked)")
    axes.grid(alpha=0.3)
    return svg(figure, "batch-requests")


def depth_plot(report: BatchReport, field: str, title: str) -> Markup:
    """`field` (novelty or harvest) by page number: the mean over all pages with ±1 sd shaded,
    each source's mean as a thin line; the page counts under the page numbers."""
    figure = Figure(figsize=(6, 4))
    axes = figure.subplots()
    rows = [row for row in report.depth if getattr(row, field).n]
    if rows:
        pages = [row.page_number for row in rows]
        means = [getattr(row, field).mean for row in rows]
        sds = [getattr(row, field).sd for row in rows]
        colors = _colors(report.sources)
        sources = sorted({s for row in rows for s in row.by_source})
        for source in sources:
            points = [
                (row.page_number, getattr(row.by_source[source], field).mean)
                for row in rows
                if source in row.by_source and getattr(row.by_source[source], field).n
            ]
            if points:
                axes.plot(
                    *zip(*points, strict=True),
                    color=colors.get(source, "#999"),
                    linewidth=1,
                    alpha=0.7,
                    marker=".",
                    label=source,
                )
        # A rate lies in 0..1: so does the band drawn around its mean.
        low = [max(m - s, 0.0) for m, s in zip(means, sds, strict=True)]
        high = [min(m + s, 1.0) for m, s in zip(means, sds, strict=True)]
        axes.fill_between(pages, low, high, color="#444", alpha=0.15, label="±1 sd, all pages")
        axes.plot(pages, means, color="#111", linewidth=2.5, marker="o", label="mean, all pages")
        axes.set_xticks(pages, [f"{row.page_number}\n{row.pages}" for row in rows])
        axes.set_xlabel("page number / pages fetched")
        # Below the axes: inside, it would hide the low rates of deep pages.
        axes.legend(
            loc="upper center",
            bbox_to_anchor=(0.5, -0.3),
            fontsize="x-small",
            ncol=4,
            frameon=False,
        )
    else:
        axes.set_xticks([])
        axes.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=axes.transAxes)
    axes.set_ylim(-0.05, 1.05)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    return svg(figure, f"batch-{field}")


def batch_report_html(
    report: BatchReport,
    *,
    generated_at: str,
    queries: Sequence[QueryReport] = (),
    quota_today: Sequence[QuotaUse] = (),
) -> str:
    progress = report.progress
    engines = sorted(set(progress.requests) | set(progress.blocks))
    total = progress.total_requests or 1
    return render(
        "batch.html",
        title=f"lyra_crawl batch {report.record.id}",
        generated_at=generated_at,
        batch=report.record,
        summary=summary_rows(report),
        requests_plot=requests_plot(report),
        engine_rows=[
            (
                engine,
                progress.requests.get(engine, 0),
                f"{100 * progress.requests.get(engine, 0) / total:.0f}%",
                progress.blocks.get(engine, 0),
            )
            for engine in engines
        ],
        stop_reason_rows=stop_reason_rows(report),
        block_rows=[(block.engine, block.kind, block.pages) for block in report.blocks],
        quota_rows=[
            (use.day, use.engine, use.used, use.daily_limit or "none") for use in report.quota
        ],
        novelty_plot=depth_plot(report, "novelty", "novelty rate"),
        harvest_plot=depth_plot(report, "harvest", "harvest rate"),
        depth_rows=[
            (row.page_number, row.pages, spread(row.novelty), spread(row.harvest))
            for row in report.depth
        ],
        unsuccessful_entries=report.unsuccessful_entries,
        listed_entries=[entry_line(entry) for entry in report.listed_entries],
        **(query_context(queries, quota_today) if queries else {"queries": ()}),
    )
