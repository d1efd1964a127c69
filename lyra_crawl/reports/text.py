"""Crawl reports read back from storage: `scrapy report` and `make demo`.

Per query: engine, sources, pages per source, items new vs repeated (repeated = a normalized URL
an earlier crawl of the same normalized query already stored), stop reasons, harvest rate,
paper attribution counts, its papers' evidence (read from the abstract, or to fetch and why),
and the engine's quota use today. report_html.py draws the same figures as one HTML page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from lyra_crawl.backends import Backends
from lyra_crawl.backends.protocols import Coordinator, ResultStore
from lyra_crawl.config import LyraConfig, load_config
from lyra_crawl.quoting import show
from lyra_crawl.records import StoredPage, StoredQuery

ATTRIBUTIONS = ("both", "api_only", "serp_only")
EVIDENCE_KINDS = ("abstract", "fetch")


@dataclass(frozen=True, kw_only=True)
class PageFigures(StoredPage):
    @classmethod
    def of(cls, page: StoredPage) -> PageFigures:
        return cls(**vars(page))

    @property
    def novelty(self) -> float | None:
        """The stored novelty rate; else the share of the page's results stored as new items."""
        if self.novelty_rate is not None:
            return self.novelty_rate
        return self.items_stored / self.results if self.results else None


@dataclass(frozen=True, kw_only=True)
class QueryReport(StoredQuery):
    """A query's row with what the report counts from its stored pages and items."""

    repeated: int
    pages: list[PageFigures]
    # The query's papers by evidence (abstract, fetch), and those to fetch by reason.
    evidence: Mapping[str, int] = field(default_factory=dict)
    fetch_reasons: Mapping[str, int] = field(default_factory=dict)

    @property
    def query_id(self) -> int:
        return self.id

    @property
    def stop_reasons(self) -> Mapping[str, str]:
        return self.stop_reason

    @property
    def new(self) -> int:
        return self.items - self.repeated

    @property
    def pages_per_source(self) -> dict[str, int]:
        return dict(Counter(page.source for page in self.pages))


@dataclass(frozen=True)
class QuotaUse:
    engine: str
    used: int
    daily_limit: int | None


async def query_report(store: ResultStore, query_id: int) -> QueryReport | None:
    row = await store.query(query_id)
    if row is None:
        return None
    counts = await store.attribution_counts(query_id)
    pages = [PageFigures.of(page) for page in await store.pages(query_id)]
    papers = await store.papers_of(query_id)
    counted = {
        "attribution": {name: counts.get(name, 0) for name in ATTRIBUTIONS},
        "evidence": {
            kind: sum(paper.evidence == kind for paper in papers) for kind in EVIDENCE_KINDS
        },
        "fetch_reasons": dict(
            Counter(paper.evidence_reason for paper in papers if paper.evidence == "fetch")
        ),
        # Counted from the stored pages: an interrupted crawl never wrote its row's totals.
        "items": sum(page.items_stored for page in pages),
        "repeated": await store.repeated_url_count(query_id),
        "pages": pages,
    }
    return QueryReport(**{**vars(row), **counted})


async def quota_use(coordinator: Coordinator, config: LyraConfig, day: date) -> list[QuotaUse]:
    """Engines used on `day` or holding a daily limit, with requests counted against it."""
    used = await coordinator.quota_used_on(day.isoformat())
    engines = sorted(
        set(used)
        | {
            name
            for name, policy in config.policies.items()
            if policy.enabled and policy.daily_limit is not None
        }
    )
    return [
        QuotaUse(
            engine=name,
            used=used.get(name, 0),
            daily_limit=config.policies[name].daily_limit if name in config.policies else None,
        )
        for name in engines
    ]


def rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def quota_text(quota: QuotaUse | None, engine: str) -> str:
    if quota is None:
        return f"{engine} 0 (no daily limit)"
    limit = "no daily limit" if quota.daily_limit is None else f"of {quota.daily_limit}"
    return f"{quota.engine} {quota.used} ({limit})"


def query_lines(report: QueryReport, quota: Sequence[QuotaUse]) -> list[str]:
    by_engine = {use.engine: use for use in quota}
    labels = [f"task {report.task_id}"] if report.task_id else []
    labels += [f"job {report.job_id}"] if report.job_id else []
    pages = ", ".join(f"{source} {n}" for source, n in sorted(report.pages_per_source.items()))
    stop = ", ".join(f"{k}: {v}" for k, v in sorted(report.stop_reasons.items()))
    return [
        f"query {report.query_id}: {show(report.query_text)}"
        + (f" ({', '.join(labels)})" if labels else ""),
        f"  engine {report.engine}, sources {report.sources}, status {report.status}, "
        f"started {report.started_at}",
        f"  pages fetched: {pages or '-'}",
        f"  items {report.items}: {report.new} new, {report.repeated} repeated",
        f"  stop {stop or '-'}, harvest {rate(report.harvest_rate)}",
        "  attribution "
        + ", ".join(f"{name} {count}" for name, count in report.attribution.items()),
        f"  evidence {evidence_text(report)}",
        f"  quota today: {quota_text(by_engine.get(report.engine), report.engine)}",
    ]


def evidence_text(report: QueryReport) -> str:
    """'abstract 40, fetch 12 (no abstract 9, abstract shorter than 200 chars 3)'."""
    counts = ", ".join(f"{kind} {count}" for kind, count in report.evidence.items())
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(report.fetch_reasons.items()))
    return counts + (f" ({reasons})" if reasons else "")


def page_lines(report: QueryReport) -> list[str]:
    return [
        f"    {page.source} page {page.page_number}: {page.outcome}, {page.results} results, "
        f"{page.items_stored} items kept, novelty {rate(page.novelty)}, "
        f"harvest {rate(page.harvest_rate)}"
        for page in report.pages
    ]


def report_text(reports: Sequence[QueryReport], quota: Sequence[QuotaUse]) -> str:
    lines: list[str] = []
    for report in reports:
        lines += [*query_lines(report, quota), "  pages:", *page_lines(report), ""]
    lines.append("quota use today:")
    lines += [f"  {quota_text(use, use.engine)}" for use in quota] or ["  -"]
    return "\n".join(lines)


async def query_summary(backends: Backends, query_id: int, *, first_items: int = 5) -> str:
    """One query's report with its pages and first items, as plain text (`make demo`)."""
    store = backends.store
    report = await query_report(store, query_id)
    if report is None:
        return f"query {query_id}: not in {store.url}"
    items = await store.items(query_id)
    quota = await quota_use(backends.coordinator, load_config(), datetime.now(UTC).date())
    lines = [*query_lines(report, quota), "  pages:", *page_lines(report)]
    lines.append(f"  first {min(first_items, len(items))} items:")
    for item in items[:first_items]:
        lines.append(f"    #{item.rank} (page {item.page_number}) {item.title}\n        {item.url}")
    return "\n".join(lines)
