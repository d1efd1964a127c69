"""Benchmark of `scrapy export-papers`: 100,000 papers in every format, and its memory.

Run as ``python -m benchmarks export``. A real SQLite store is filled through the store's own
calls (``store_page``, ``save_papers``) with one task of 10 queries of 10,000 distinct papers
each: seeded titles, five authors, a venue, a DOI and a 1,200-character abstract, as an API
gives them. Then, side by side in one run, the real command in a process of its own (Scrapy's
start included, as a user waits for it), for each format:

* ``export_seconds_100k.<format>``: wall time of exporting the task's 100,000 papers to a file,
  and ``export_cpu_seconds_100k.<format>`` the CPU time the process used (user and system: what
  the wall time comes to on a machine no other job shares);
* ``export_seconds_10k.<format>``: the same for one query's 10,000 papers, and
  ``export_time_ratio_100k_over_10k.<format>``: 10 means linear;
* ``export_main_thread_cpu_seconds_100k.<format>``: the CPU time of the command's main thread
  alone, which converts and writes the papers while the store's thread reads the next page: on
  a machine of two cores no other job shares, the wall time comes to about this;
* ``export_peak_rss_mb_100k.<format>`` and ``export_peak_rss_mb_10k.<format>``: the command
  process's peak resident memory (its rusage), and ``export_rss_ratio_100k_over_10k.<format>``:
  1.0 means flat (the papers are streamed a page at a time, nothing but a page held).

Beside them ``export_goal_seconds_100k``, the goal (100,000 papers in 10 s), and
``export_load_average``, the machine's load average (one minute) over the exports: on a shared
machine the wall times stretch with it, and the CPU times say what an idle one would take. Each
format's 100,000-paper figures are printed beside the goal as they are measured.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

from lyra_crawl.backend_urls import sqlite_url
from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import CanonicalPaper, PaperRecord
from lyra_crawl.records import PageRecord, QueryRecord
from lyra_crawl.reports.paper_export.streaming import WRITERS

ROOT = pathlib.Path(__file__).resolve().parents[1]
QUERIES = 10
PAPERS_PER_QUERY = 10_000
SEED = 20261127
SUFFIX = {"ris": "ris", "bibtex": "bib", "csljson": "json", "csv": "csv"}
GOAL_SECONDS_100K = 10.0


def run(shared_dir: pathlib.Path) -> dict[str, float]:
    figures: dict[str, float] = {"export_goal_seconds_100k": GOAL_SECONDS_100K}
    loads = []
    with tempfile.TemporaryDirectory() as folder:
        db = pathlib.Path(folder) / "bench.sqlite3"
        first_query = asyncio.run(with_backends({"LYRA_DB_URL": sqlite_url(db)}, _fill))
        for form in WRITERS:
            for label, scope in (
                ("10k", ("--query-id", str(first_query))),
                ("100k", ("--task", "bench")),
            ):
                loads.append(os.getloadavg()[0])
                seconds, cpu, main_cpu, rss_mb = _export(
                    db, pathlib.Path(folder) / f"out.{SUFFIX[form]}", scope
                )
                figures[f"export_seconds_{label}.{form}"] = round(seconds, 2)
                figures[f"export_cpu_seconds_{label}.{form}"] = round(cpu, 2)
                figures[f"export_peak_rss_mb_{label}.{form}"] = round(rss_mb, 1)
            figures[f"export_main_thread_cpu_seconds_100k.{form}"] = round(main_cpu, 2)
            print(
                f"   100,000 papers as {form}: {figures[f'export_cpu_seconds_100k.{form}']} s CPU"
                f" (the main thread {figures[f'export_main_thread_cpu_seconds_100k.{form}']} s),"
                f" {figures[f'export_seconds_100k.{form}']} s wall at load average"
                f" {loads[-1]:.1f}; goal <= {GOAL_SECONDS_100K:g} s",
                flush=True,
            )
            figures[f"export_time_ratio_100k_over_10k.{form}"] = round(
                figures[f"export_seconds_100k.{form}"] / figures[f"export_seconds_10k.{form}"], 2
            )
            figures[f"export_rss_ratio_100k_over_10k.{form}"] = round(
                figures[f"export_peak_rss_mb_100k.{form}"]
                / figures[f"export_peak_rss_mb_10k.{form}"],
                2,
            )
    figures["export_load_average"] = round(sum(loads) / len(loads), 1)
    return figures


# The command in a process of its own that, as it exits, writes its peak resident memory (VmHWM:
# the peak of this program's memory alone; a child's rusage would count the benchmark's own
# memory, which the child shares from its fork until it runs the command) and its main thread's
# CPU time (atexit runs on the main thread).
_COMMAND = (
    "import atexit, sys, time\n"
    "from scrapy.cmdline import execute\n"
    "def peak():\n"
    "    status = open('/proc/self/status').read()\n"
    "    sys.stderr.write('VmHWM ' + status.split('VmHWM:')[1].split()[0] + '\\n')\n"
    "    sys.stderr.write(f'main thread CPU {time.thread_time()}\\n')\n"
    "atexit.register(peak)\n"
    "execute(['scrapy', 'export-papers', *sys.argv[1:]])\n"
)


def _export(
    db: pathlib.Path, target: pathlib.Path, scope: tuple[str, ...]
) -> tuple[float, float, float, float]:
    """Wall seconds, CPU seconds, the main thread's CPU seconds and peak RSS (MB) of one
    `scrapy export-papers` process."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-c", _COMMAND, *scope, "-o", str(target)],
        cwd=ROOT,
        env={**os.environ, "LYRA_DB_PATH": str(db)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    error = process.stderr.read() if process.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"export-papers {' '.join(scope)} failed: {error}")
    peak_kb = int(error.rsplit("VmHWM ", 1)[1].split()[0])
    main_cpu = float(error.rsplit("main thread CPU ", 1)[1].split()[0])
    return seconds, usage.ru_utime + usage.ru_stime, main_cpu, peak_kb / 1024


async def _fill(backends: Backends) -> int:
    """The task's queries and papers; returns the first query's id."""
    store = backends.store
    rng = random.Random(SEED)
    words = [
        "".join(rng.choices("bcdfghklmnprstvz aeiou", k=rng.randint(4, 9))).strip() or "x"
        for _ in range(5000)
    ]
    surnames = [w.title() for w in rng.sample(words, 800)]
    venues = [
        f"Journal of {rng.choice(words).title()} {rng.choice(words).title()}" for _ in range(200)
    ]
    query_ids = []
    for query in range(QUERIES):
        text = f"bench query {query}"
        query_id = await store.start_query(
            QueryRecord(text, text, "openalex", 1, 1, "fixed", sources="openalex", task_id="bench")
        )
        query_ids.append(query_id)
        papers, items = [], []
        for rank in range(1, PAPERS_PER_QUERY + 1):
            number = query * PAPERS_PER_QUERY + rank
            title = f"{' '.join(rng.choices(words, k=8)).capitalize()} {number}"
            url = f"https://bench.example/paper/{number}"
            record = PaperRecord(
                source="openalex",
                title=title,
                doi=f"10.9999/bench.{number}",
                year=rng.randint(1990, 2025),
                authors=tuple(
                    f"{rng.choice(words).title()} {rng.choice(surnames)}" for _ in range(5)
                ),
                venue=rng.choice(venues),
                abstract=" ".join(rng.choices(words, k=180))[:1200],
                source_id=f"W{number}",
                url=url,
                kind="api",
            )
            papers.append((_paper(rank, record), [url]))
            items.append(
                ResultItem(
                    url=url,
                    title=title,
                    query_id=query_id,
                    source="openalex",
                    kind="api",
                    page_number=1,
                    position=rank,
                    normalized_url=url,
                    rank=rank,
                    doi=record.doi,
                )
            )
        await store.store_page(PageRecord(query_id, "openalex", 1, "ok", len(items)), items)
        await store.save_papers(
            query_id, papers, {}, {"api_only": len(papers)}, min_abstract_chars=100
        )
    return query_ids[0]


def _paper(key: int, record: PaperRecord) -> CanonicalPaper:
    return CanonicalPaper(
        key=key,
        records=[record],
        doi=record.doi,
        arxiv_id=None,
        pmid=None,
        title=record.title,
        normalized_title=record.title.lower(),
        year=record.year,
        authors=record.authors,
        venue=record.venue,
        abstract=record.abstract,
        sources={"openalex"},
        attribution="api_only",
    )


if __name__ == "__main__":
    for name, value in run(ROOT.parent / "shared").items():
        print(f"{name:<45} {value}")
