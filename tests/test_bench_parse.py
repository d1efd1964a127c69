"""benchmarks/bench_parse.py gives both figures for every engine with captured pages."""

from __future__ import annotations

from benchmarks.bench_parse import real_pages, run
from tests.conftest import realworld_dir


def test_bench_parse_reports_time_and_ratio_per_engine() -> None:
    folder = realworld_dir()
    engines = {engine for engine, _, _ in real_pages(folder.parent)}

    figures = run(folder.parent, rounds=1)

    assert set(figures) == {
        f"{figure}.{engine}"
        for engine in engines
        for figure in ("parse_ms_median", "parse_ratio_vs_bare")
    }
    assert all(value > 0 for value in figures.values())
