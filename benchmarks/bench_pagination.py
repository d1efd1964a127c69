"""Adaptive pagination against fixed depth on 50 simulated queries of varied shape.

The simulator gives each query its own seeded overlap growth, off-topic drift and length
(--shape-by-query). The same 50 queries run with strategy=auto and strategy=fixed at 10 pages:
`auto_vs_fixed_request_ratio` = requests spent by auto / by fixed (goal <= 0.6);
`auto_unique_relevant_kept` = unique relevant results kept by auto / by fixed (goal >= 0.95).
"""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from pathlib import Path

from benchmarks.crawl_runner import run_crawls
from lyra_crawl.config import load_config
from lyra_crawl.simulator.process import running_simulator

PAGES = 10
SUBJECTS = (
    "coastal",
    "urban",
    "soil",
    "forest",
    "river",
    "arctic",
    "crop",
    "coral",
    "alpine",
    "dryland",
)
TOPICS = ("flood risk", "heat stress", "carbon storage", "species loss", "water scarcity")
QUERIES = [("mojeek", f"{a} {b}") for a, b in itertools.product(SUBJECTS, TOPICS)]


def _unique_relevant(db_path: Path, threshold: float) -> int:
    with sqlite3.connect(db_path) as conn:
        return conn.execute(
            "SELECT COUNT(DISTINCT query_id || ' ' || normalized_url) FROM serp_items"
            " WHERE relevance >= ?",
            (threshold,),
        ).fetchone()[0]


def run(shared_dir: Path) -> dict[str, float]:
    threshold = load_config().pagination.relevance_threshold
    requests: dict[str, float] = {}
    relevant: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for strategy in ("auto", "fixed"):
            with running_simulator(["--shape-by-query"]) as simulator_url:
                db_path = Path(tmp) / f"{strategy}.sqlite3"
                measured = run_crawls("serp", simulator_url, db_path, QUERIES, PAGES, strategy)
                requests[strategy] = measured["pages"]
                relevant[strategy] = _unique_relevant(db_path, threshold)
    return {
        "pagination_queries": len(QUERIES),
        "requests.auto": requests["auto"],
        "requests.fixed": requests["fixed"],
        "auto_vs_fixed_request_ratio": requests["auto"] / requests["fixed"],
        "auto_unique_relevant_kept": relevant["auto"] / relevant["fixed"],
    }
