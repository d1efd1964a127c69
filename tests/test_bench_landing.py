"""benchmarks/bench_landing.py counts every real landing page, the project's and shared's, by
where its abstract was read from, and every page that shows one and gave none."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.bench_landing import PROJECT_PAGES, run

LANDING = PROJECT_PAGES / "landing"


def test_bench_landing_counts_the_project_and_shared_pages(tmp_path: Path) -> None:
    project = json.loads((LANDING / "pages.json").read_text(encoding="utf-8"))
    shared = tmp_path / "realworld" / "landing"
    shared.mkdir(parents=True)
    name = "iopscience-1748-605X-ab007b.html"  # read from microdata
    shutil.copy(LANDING / name, shared / name)
    (shared / "pages.json").write_text(json.dumps({name: project[name]}), encoding="utf-8")

    figures = run(tmp_path, rounds=1)

    counts = {key.removeprefix("landing_abstracts."): value for key, value in figures.items()}
    assert counts["pages"] == len(project) + 1
    assert counts["showing_one"] == sum(e["shows_abstract"] for e in project.values()) + 1
    read = {source: counts[source] for source in ("metadata", "microdata", "rdfa", "body")}
    assert sum(read.values()) + counts["missed"] == counts["showing_one"]
    assert read["microdata"] == 2 and read["body"] > 0
    assert counts["read_without_one"] == 0
    assert figures["landing_read_ms_median"] > 0 and figures["landing_read_ratio_vs_parse"] > 1
