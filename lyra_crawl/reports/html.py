"""`scrapy report --html`: one self-contained HTML page, plots drawn by matplotlib as inline SVG.

Per query: a table row and a plot of novelty and harvest per page (one line per source); for
the day: a bar plot of quota use per engine against its daily limit. Nothing is loaded from
elsewhere, so the file can be mailed or archived as it is. The pages are Jinja2 templates
(templates/, shipped as package data) with autoescape on: every value from the store is
escaped; only the plots' SVG, marked as Markup where matplotlib writes it, goes in as it is.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lyra_crawl.reports.text import QueryReport, QuotaUse, rate

TEMPLATES = Environment(
    loader=PackageLoader("lyra_crawl.reports"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
QUERY_HEAD = (
    "id",
    "query",
    "engine",
    "sources",
    "status",
    "pages",
    "items",
    "new",
    "repeated",
    "stop",
    "harvest",
    "both / api_only / serp_only",
    "abstract / fetch",
)
QUERY_NUMERIC = (0, 6, 7, 8, 10)


def render(template: str, **context: Any) -> str:
    """The page `template` (lyra_crawl/reports/templates) makes of `context`, every value
    escaped but the plots (Markup)."""
    return TEMPLATES.get_template(template).render(**context)


def svg(figure: Figure, salt: str) -> Markup:
    """The figure as an inline <svg> element, its ids salted so several share one page; markup
    matplotlib wrote, placed in a page as it is."""
    buffer = io.StringIO()
    with rc_context({"svg.hashsalt": salt}):
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return Markup(text[text.index("<svg") :])


def _per_page(axes: Axes, report: QueryReport, field: str, title: str) -> None:
    drawn = False
    for source in sorted(report.pages_per_source):
        points = [
            (page.page_number, getattr(page, field))
            for page in report.pages
            if page.source == source and getattr(page, field) is not None
        ]
        if points:
            axes.plot(*zip(*points, strict=True), marker="o", label=source)
            drawn = True
    axes.set_title(title)
    axes.set_xlabel("page")
    axes.set_ylim(-0.05, 1.05)
    axes.grid(alpha=0.3)
    if drawn:
        axes.xaxis.get_major_locator().set_params(integer=True)
        axes.legend(loc="lower left", fontsize="small")
    else:
        axes.set_xticks([])
        axes.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=axes.transAxes)


def rates_plot(report: QueryReport) -> Markup:
    figure = Figure(figsize=(9, 2.8))
    novelty, harvest = figure.subplots(1, 2)
    _per_page(novelty, report, "novelty", "novelty rate per page")
    _per_page(harvest, report, "harvest_rate", "harvest rate per page")
    return svg(figure, f"query{report.query_id}")


def quota_plot(quota: Sequence[QuotaUse]) -> Markup:
    """Share of each engine's daily limit used today, labelled with the request counts."""
    figure = Figure(figsize=(9, 0.4 * len(quota) + 1.0))
    axes = figure.subplots()
    names = [use.engine for use in quota]
    shares = [min(use.used / use.daily_limit, 1.0) if use.daily_limit else 0.0 for use in quota]
    bars = axes.barh(names, shares, color=["#c0392b" if s >= 1 else "#3a7bd5" for s in shares])
    labels = [
        f"{use.used} of {use.daily_limit}" if use.daily_limit else f"{use.used}, no daily limit"
        for use in quota
    ]
    axes.bar_label(bars, labels, padding=4, fontsize="small")
    axes.set_xlim(0, 1.25)
    axes.set_xticks([0, 0.25, 0.5, 0.75, 1.0], ["0", "25%", "50%", "75%", "100%"])
    axes.set_xlabel("share of the daily limit used (UTC day)")
    axes.invert_yaxis()
    axes.grid(axis="x", alpha=0.3)
    return svg(figure, "quota")


def _row(report: QueryReport) -> tuple[object, ...]:
    """A query's cells in the per-query table (QUERY_HEAD)."""
    return (
        report.query_id,
        report.query_text,
        report.engine,
        report.sources.replace(",", ", "),
        report.status,
        ", ".join(f"{s} {n}" for s, n in sorted(report.pages_per_source.items())),
        report.items,
        report.new,
        report.repeated,
        ", ".join(f"{k}: {v}" for k, v in sorted(report.stop_reasons.items())) or "-",
        rate(report.harvest_rate),
        " / ".join(str(n) for n in report.attribution.values()),
        " / ".join(str(n) for n in report.evidence.values()),
    )


def query_context(reports: Sequence[QueryReport], quota: Sequence[QuotaUse]) -> dict[str, Any]:
    """What templates/queries.html shows: the per-query table, each query's plots, and today's
    quota use."""
    return {
        "query_head": QUERY_HEAD,
        "query_numeric": QUERY_NUMERIC,
        "query_rows": [_row(report) for report in reports],
        "queries": [
            {
                "id": report.query_id,
                "text": report.query_text,
                "labels": [
                    label
                    for label in (
                        f"task {report.task_id}" if report.task_id else "",
                        f"job {report.job_id}" if report.job_id else "",
                        f"started {report.started_at}",
                    )
                    if label
                ],
                "plot": rates_plot(report),
            }
            for report in reports
        ],
        "quota_plot": quota_plot(quota) if quota else None,
    }


def report_html(
    reports: Sequence[QueryReport], quota: Sequence[QuotaUse], *, generated_at: str
) -> str:
    return render(
        "report.html",
        title="lyra_crawl report",
        generated_at=generated_at,
        **query_context(reports, quota),
    )
