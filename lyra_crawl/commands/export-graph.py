"""`scrapy export-graph --task TASK [--format graphml|csv] [-o FILE]`: a task's citation graph.

Nodes are the papers the task's queries found and the papers their citation lists reached;
edges the citations those lists read (lyra_crawl.reports.graph_export). GraphML goes to FILE
(default `<task>.graphml`; `-o -` prints it); CSV goes to two files, FILE's name with `-nodes`
and `-edges` (default `<task>-nodes.csv` and `<task>-edges.csv`). Reads the store
(LYRA_DB_URL). Exit status 1 when the task has no query, 2 when the store cannot be read.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.quoting import show
from lyra_crawl.records import BackendError, CitationGraph
from lyra_crawl.reports.graph_export import csv_tables, graphml

FORMATS = ("graphml", "csv")


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    requires_crawler_process = False

    def syntax(self) -> str:
        return "--task TASK [--format graphml|csv] [-o FILE]"

    def short_desc(self) -> str:
        return "Write a task's citation graph as GraphML (networkx, Gephi) or CSV"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--task", metavar="TASK", help="the task_id its queries ran with")
        parser.add_argument("--format", choices=FORMATS, default="graphml")
        parser.add_argument(
            "-o", "--output", metavar="FILE", help="where to write (csv: the tables' name)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError(f"unexpected argument {show(args[0])}")
        if not opts.task:
            raise UsageError("--task TASK is required: the task_id the queries ran with")
        try:
            found = run_sync(with_backends(self.settings, lambda b: self._gather(b, opts.task)))
        except BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        if found is None:
            print(f"error: task {show(opts.task)} has no query in the store", file=sys.stderr)
            self.exitcode = 1
            return
        graph = found
        stem = opts.output or re.sub(r"[^\w.-]", "_", opts.task)
        if opts.format == "graphml":
            text = graphml(graph, opts.task)
            if stem == "-":
                sys.stdout.write(text)
                return
            path = Path(stem if opts.output else f"{stem}.graphml")
            path.write_text(text, encoding="utf-8")
            written = [path]
        else:
            base = stem.removesuffix(".csv")
            written = [Path(f"{base}-nodes.csv"), Path(f"{base}-edges.csv")]
            for path, table in zip(written, csv_tables(graph), strict=True):
                path.write_text(table, encoding="utf-8")
        edges = len({(e.citing, e.cited) for e in graph.edges})
        print(
            f"wrote {', '.join(map(str, written))}: {len(graph.papers)} papers, {edges} citations"
        )

    async def _gather(self, backends: Backends, task: str) -> CitationGraph | None:
        store = backends.store
        if not await store.query_ids(task_id=task):
            return None
        return await store.task_citation_graph(task)
