"""`scrapy report --batch ID`: a real batch on the simulator, its figures checked against the
SQLite tables they are aggregated from, and its one self-contained HTML page."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from statistics import fmean, pstdev

import pytest

from tests.conftest import edited_config, query_db, run_scrapy

BATCH = (
    "defaults: {serp_max_pages: 3, strategy: fixed}\n"
    "queries:\n"
    "  - {query: river deltas, engine: duckduckgo, sources: [serp, openalex]}\n"
    "  - {query: salt marshes, engine: duckduckgo, sources: [serp, openalex]}\n"
    "  - {query: kelp forests, engine: mojeek, sources: [serp]}\n"
    "  - {query: sea grass, engine: mojeek, sources: [serp]}\n"
    "  - {query: bad one, serp_max_pages: 11}\n"
)
# The module's batch is crawled from a simulator of its own (batch_db).
pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def batch_db(tmp_path_factory) -> Path:
    """One batch crawled: duckduckgo with OpenAlex, mojeek answering its page 2 with a CAPTCHA
    (the breaker's cool-down cut to 2 s, which the other mojeek entry waits for), repeated and
    drifting results so the rates vary by page."""
    from lyra_crawl.simulator.process import running_simulator

    folder = tmp_path_factory.mktemp("batch-report")
    db_path = folder / "lyra.sqlite3"
    (folder / "batch.yaml").write_text(BATCH)
    config = edited_config(
        folder / "config",
        lambda policy: policy["breaker"].update(
            cooldown_s=dict.fromkeys(policy["breaker"]["cooldown_s"], 2)
        ),
    )
    options = ["--captcha-at", "mojeek:2", "--overlap", "0.3", "--drift", "0.3"]
    with running_simulator(options) as url:
        result = run_scrapy(
            "batch",
            str(folder / "batch.yaml"),
            env={
                "LYRA_SIMULATOR_URL": url,
                "LYRA_DB_PATH": str(db_path),
                "LYRA_RATE_LIMIT_ENABLED": "false",
                "LYRA_PROGRESS_INTERVAL": "0",
                "LYRA_CONFIG_DIR": str(config),
            },
        )
    assert result.returncode == 1, result.stderr[-3000:]  # the rejected entry
    return db_path


def report(db_path: Path, *args: str) -> str:
    result = run_scrapy("report", *args, env={"LYRA_DB_PATH": str(db_path)})
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def section(text: str, heading: str) -> list[str]:
    """The indented lines under the line starting with `heading`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        body.append(line.strip())
    return body


def test_the_batch_figures_are_those_of_the_tables(batch_db):
    text = report(batch_db, "--batch", "1")

    states = Counter(row["state"] for row in query_db(batch_db, "SELECT state FROM batch_entries"))
    assert states == {"done": 4, "rejected": 1}
    pages = query_db(batch_db, "SELECT * FROM serp_pages")
    per_engine = Counter(page["source"] for page in pages)
    summary = dict(line.split(None, 1) for line in section(text, "batch 1:") if " " in line)
    assert summary["entries"] == "5: 4 done, 0 running, 0 pending, 0 failed, 1 rejected"
    assert summary["queries"] == "4"
    assert summary["pages"] == f"{len(pages)}: {len(pages)} requests, 0 replayed from the cache"
    assert summary["items"] == str(sum(page["items_stored"] for page in pages))
    assert "per engine  " + ", ".join(
        f"{engine} {n}" for engine, n in sorted(per_engine.items())
    ) in "\n".join(section(text, "batch 1:"))

    reasons: dict[str, Counter] = defaultdict(Counter)
    for row in query_db(batch_db, "SELECT stop_reason FROM queries"):
        for source, reason in json.loads(row["stop_reason"]).items():
            reasons[reason][source] += 1
    expected = sorted(reasons.items(), key=lambda item: (-sum(item[1].values()), item[0]))
    assert section(text, "stop reasons") == [
        f"{reason} {sum(by.values())}: " + ", ".join(f"{s} {n}" for s, n in sorted(by.items()))
        for reason, by in expected
    ]
    assert "blocked" in reasons and "max_pages" in reasons

    blocks = query_db(
        batch_db, "SELECT engine, kind, COUNT(*) AS n FROM intervention_queue GROUP BY 1, 2"
    )
    assert section(text, "blocks") == [f"{b['engine']} {b['kind']} {b['n']}" for b in blocks]
    assert blocks and blocks[0]["engine"] == "mojeek"

    today = datetime.now(UTC).date().isoformat()
    usage = query_db(batch_db, "SELECT engine, usage_count FROM engine_usage ORDER BY engine")
    assert section(text, "quota use") == [
        f"{today} {row['engine']} {row['usage_count']} "
        + ("of 100000" if row["engine"] == "openalex" else "(no daily limit)")
        for row in usage
    ]

    over_time = section(text, "requests per engine over time")
    assert sum(int(line.split()[1].rstrip(":")) for line in over_time) == len(pages)

    by_page = defaultdict(list)
    for page in pages:
        by_page[page["page_number"]].append(page)
    depth = []
    for number, rows in sorted(by_page.items()):
        novelty = [
            row["novelty_rate"]
            if row["novelty_rate"] is not None
            else row["items_stored"] / row["results"]
            for row in rows
            if row["novelty_rate"] is not None or row["results"]
        ]
        harvest = [row["harvest_rate"] for row in rows if row["harvest_rate"] is not None]
        depth.append(
            f"page {number}: {len(rows)} pages, "
            f"novelty {fmean(novelty):.2f} ± {pstdev(novelty):.2f}, "
            f"harvest {fmean(harvest):.2f} ± {pstdev(harvest):.2f}"
        )
    assert section(text, "novelty and harvest by page") == depth
    assert len({line.split("novelty")[1] for line in depth}) > 1, "rates vary with depth"

    assert section(text, "failed and rejected entries (1 of 1 shown)") == [
        "entry 5 'bad one': rejected: "
        + query_db(batch_db, "SELECT detail FROM batch_entries WHERE position = 5")[0]["detail"]
    ]
    assert "per query:" not in text


def test_the_batch_page_is_self_contained_with_three_plots_and_queries_only_on_request(
    batch_db, tmp_path
):
    page = tmp_path / "batch.html"
    text = report(batch_db, "--batch", "1", "--html", str(page))

    html = page.read_text()
    assert f"wrote {page}" in text
    assert html.startswith("<!DOCTYPE html>")
    # Self-contained: nothing loaded; the SVGs' only links are to their own #ids.
    assert not re.search(r"<(script|link|img|iframe)\b|\b(src|href)=[\"'](?!#)", html)
    assert html.count("<svg") == 3, "requests over time, novelty and harvest by page"
    for title in ("requests per engine over time", "novelty rate", "harvest rate"):
        assert title in html
    assert "river deltas" not in html

    detailed = tmp_path / "detailed.html"
    text = report(batch_db, "--batch", "1", "--per-query", "--html", str(detailed))

    html = detailed.read_text()
    assert html.count("<svg") == 3 + 4 + 1, "the batch's, one per query, quota today"
    assert "river deltas" in html and "sea grass" in html
    assert "per query:" in text and "query 4: 'sea grass'" in text


def test_an_unknown_batch_exits_1_and_per_query_needs_a_batch(db_path):
    missing = run_scrapy("report", "--batch", "9", env={"LYRA_DB_PATH": str(db_path)})
    alone = run_scrapy("report", "--per-query", env={"LYRA_DB_PATH": str(db_path)})

    assert missing.returncode == 1
    assert "error: no batch 9 in " in missing.stderr
    assert alone.returncode == 2
    assert "--per-query goes with --batch ID" in alone.stderr
