"""`scrapy report --html`: one self-contained HTML page, plots drawn by matplotlib as inline SVG.

Per query: a table row and a plot of novelty and harvest per page (one line per source); for
the day: a bar plot of quota use per engine against its daily limit. Nothing is loaded from
elsewhere, so the file can be mailed or archived as it is.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from html import escape

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from lyra_crawl.reports.text import QueryReport, QuotaUse, rate

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.5rem; text-align: left; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.plot svg { max-width: 100%; height: auto; }
.muted { color: #666; }
"""


def svg(figure: Figure, salt: str) -> str:
    """The figure as an inline <svg> element, its ids salted so several share one page."""
    buffer = io.StringIO()
    with rc_context({"svg.hashsalt": salt}):
        figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]


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


def rates_plot(report: QueryReport) -> str:
    figure = Figure(figsize=(9, 2.8))
    novelty, harvest = figure.subplots(1, 2)
    _per_page(novelty, report, "novelty", "novelty rate per page")
    _per_page(harvest, report, "harvest_rate", "harvest rate per page")
    return svg(figure, f"query{report.query_id}")


def quota_plot(quota: Sequence[QuotaUse]) -> str:
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


def _row(report: QueryReport) -> str:
    cells = [
        str(report.query_id),
        escape(report.query_text),
        escape(report.engine),
        escape(report.sources.replace(",", ", ")),
        escape(report.status),
        escape(", ".join(f"{s} {n}" for s, n in sorted(report.pages_per_source.items()))),
        str(report.items),
        str(report.new),
        str(report.repeated),
        escape(", ".join(f"{k}: {v}" for k, v in sorted(report.stop_reasons.items())) or "-"),
        rate(report.harvest_rate),
        " / ".join(str(n) for n in report.attribution.values()),
        " / ".join(str(n) for n in report.evidence.values()),
    ]
    numeric = {0, 6, 7, 8, 10}
    return (
        "<tr>"
        + "".join(
            f'<td class="n">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(cells)
        )
        + "</tr>"
    )


def query_sections(reports: Sequence[QueryReport], quota: Sequence[QuotaUse]) -> str:
    """The per-query table, each query's plots, and today's quota use."""
    head = (
        "<tr><th class='n'>id</th><th>query</th><th>engine</th><th>sources</th><th>status</th>"
        "<th>pages</th><th class='n'>items</th><th class='n'>new</th><th class='n'>repeated</th>"
        "<th>stop</th><th class='n'>harvest</th><th>both / api_only / serp_only</th>"
        "<th>abstract / fetch</th></tr>"
    )
    sections = []
    for report in reports:
        labels = " ".join(
            f"<span class='muted'>{escape(label)}</span>"
            for label in (
                f"task {report.task_id}" if report.task_id else "",
                f"job {report.job_id}" if report.job_id else "",
                f"started {report.started_at}",
            )
            if label
        )
        sections.append(
            f"<h2>query {report.query_id}: {escape(report.query_text)}</h2><p>{labels}</p>"
            f"<div class='plot'>{rates_plot(report)}</div>"
        )
    quota_section = (
        f"<div class='plot'>{quota_plot(quota)}</div>"
        if quota
        else "<p class='muted'>no engine used today and none has a daily limit</p>"
    )
    return (
        f"<table>{head}{''.join(_row(r) for r in reports)}</table>"
        f"{''.join(sections)}<h2>quota use today</h2>{quota_section}"
    )


def report_html(
    reports: Sequence[QueryReport], quota: Sequence[QuotaUse], *, generated_at: str
) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>lyra_crawl report</title><style>{STYLE}</style></head><body>"
        f"<h1>lyra_crawl crawl report</h1><p class='muted'>generated {escape(generated_at)}, "
        f"{len(reports)} queries</p>"
        f"{query_sections(reports, quota)}</body></html>\n"
    )
