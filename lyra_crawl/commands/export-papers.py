"""`scrapy export-papers (--task TASK | --batch ID | --query-id ID | --selection ID) --format
ris|bibtex|csljson|csv [-o FILE] [--year-from Y] [--year-to Y] [--source NAME] [--attribution A]
[--evidence E]`: the canonical papers the queries found, or those a selection chose (`scrapy
select` prints its id: its hits that are papers, with every query that found them), in a format
reference managers and screening tools import.

One record per paper (lyra_crawl.reports.paper_export), streamed from the store a page at a time,
by paper id; the same store gives the same file. To FILE (written whole or not at all: FILE.part
is renamed when the last paper is in) or to standard output; without --format, FILE's suffix
names it (.ris, .bib, .json, .csv). The facets (lyra_crawl.papers.facets) keep the papers
published in a year range, found by one of the named sources (engines.yaml's names), with one of
the attributions or kinds of evidence named. Reads the store (LYRA_DB_URL) and LYRA_CONFIG_DIR.
The count of papers written goes to standard error. Exit status 1 when the task, batch or query
is not in the store (or the selection ran on a corpus file, not on the store's papers), 2 when
an argument is wrong, the store or config cannot be read or FILE
cannot be written.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from lyra_crawl.backends import Backends, run_sync, with_backends
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, load_config
from lyra_crawl.papers.collector import ATTRIBUTIONS
from lyra_crawl.papers.facets import EVIDENCE_KINDS, FacetFilter, chosen_facets
from lyra_crawl.records import BackendError

if TYPE_CHECKING:
    from lyra_crawl.reports.paper_export.streaming import PaperScope

SUFFIXES = {".ris": "ris", ".bib": "bibtex", ".json": "csljson", ".csv": "csv"}


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "(--task TASK | --batch ID | --query-id ID | --selection ID)"
            " --format ris|bibtex|csljson|csv [-o FILE]"
            " [--year-from Y] [--year-to Y] [--source NAME] [--attribution A] [--evidence E]"
        )

    def short_desc(self) -> str:
        return "Write the canonical papers found as RIS, BibTeX, CSL-JSON or CSV"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        # The writers are imported by this command alone (Scrapy imports every command to list
        # them; the writers load bibtexparser and rispy).
        from lyra_crawl.reports.paper_export.streaming import WRITERS

        super().add_options(parser)
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--task", metavar="TASK", help="the papers of this task's queries")
        which.add_argument("--batch", type=int, metavar="ID", help="of this batch's queries")
        which.add_argument("--query-id", type=int, metavar="ID", help="of this query")
        which.add_argument(
            "--selection", type=int, metavar="ID", help="those scrapy select's selection ID chose"
        )
        parser.add_argument("--format", choices=tuple(WRITERS), help="default: FILE's suffix")
        parser.add_argument("-o", "--output", metavar="FILE", help="default: standard output")
        parser.add_argument("--year-from", type=int, metavar="Y", help="published in Y or later")
        parser.add_argument("--year-to", type=int, metavar="Y", help="published in Y or earlier")
        parser.add_argument(
            "--source",
            action="append",
            default=[],
            metavar="NAME",
            help="found by this engine or API (repeatable, or comma-separated)",
        )
        parser.add_argument(
            "--attribution", action="append", default=[], choices=ATTRIBUTIONS, metavar="A"
        )
        parser.add_argument(
            "--evidence", action="append", default=[], choices=EVIDENCE_KINDS, metavar="E"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        from lyra_crawl.reports.paper_export.streaming import WRITERS, PaperScope

        if args:
            raise UsageError(f"unexpected argument {args[0]!r}")
        if (opts.task, opts.batch, opts.query_id, opts.selection) == (None, None, None, None):
            raise UsageError(
                "name the papers to export: --task TASK, --batch ID, --query-id ID or"
                " --selection ID"
            )
        scope = PaperScope(
            task_id=opts.task,
            batch_id=opts.batch,
            query_id=opts.query_id,
            selection_id=opts.selection,
        )
        writer_format = opts.format or SUFFIXES.get(Path(opts.output or "").suffix.lower())
        if writer_format is None:
            raise UsageError(
                f"--format is needed ({', '.join(WRITERS)}): "
                + (
                    f"{opts.output!r} has no suffix that names one"
                    if opts.output
                    else "it names what standard output gets"
                )
            )
        try:
            facets = chosen_facets(
                year_from=opts.year_from,
                year_to=opts.year_to,
                sources=self._sources(opts.source),
                attributions=opts.attribution,
                evidence=opts.evidence,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        try:
            counts = run_sync(
                with_backends(
                    self.settings, lambda b: self._export(b, scope, facets, writer_format, opts)
                )
            )
        except BackendError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = 2
            return
        except OSError as exc:
            print(f"error: cannot write {opts.output!r}: {exc.strerror or exc}", file=sys.stderr)
            self.exitcode = 2
            return
        if isinstance(counts, str):
            print(f"error: {counts}", file=sys.stderr)
            self.exitcode = 1
            return
        written, found = counts
        where = opts.output or "standard output"
        print(f"wrote {written} of {found} papers of {scope} to {where}", file=sys.stderr)

    def _sources(self, named: list[str]) -> frozenset[str]:
        sources = frozenset(
            name for names in named for name in map(str.strip, names.split(",")) if name
        )
        if not sources:
            return sources
        try:
            engines = load_config(self.settings.get("LYRA_CONFIG_DIR")).policies
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        if unknown := sorted(sources.difference(engines)):
            raise UsageError(
                f"unknown source {', '.join(map(repr, unknown))}: use the name of an engine or"
                f" API of engines.yaml ({', '.join(engines)})"
            )
        return sources

    async def _export(
        self,
        backends: Backends,
        scope: PaperScope,
        facets: tuple[FacetFilter, ...],
        writer_format: str,
        opts: argparse.Namespace,
    ) -> tuple[int, int] | str:
        """(written, found), or why there is nothing to export."""
        from lyra_crawl.reports.paper_export.streaming import WRITERS, export_papers

        store = backends.store
        if scope.task_id is not None:
            known: object = await store.query_ids(task_id=scope.task_id)
        elif scope.batch_id is not None:
            known = await store.batch(scope.batch_id)
        elif scope.selection_id is not None:
            known = await store.selection(scope.selection_id)
            if known is not None and not known.corpus.in_store:
                return (
                    f"{scope} ran on {known.corpus}, not on the store's papers: it chose no"
                    " paper to export"
                )
        else:
            known = scope.query_id is not None and await store.query(scope.query_id)
        if not known:
            return f"{scope} is not in the store (LYRA_DB_URL)"
        if opts.output is None:
            out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
            try:
                return await export_papers(store, scope, facets, WRITERS[writer_format](out))
            finally:
                out.flush()
                out.detach()
        target = Path(opts.output)
        part = target.with_name(target.name + ".part")
        try:
            with part.open("w", encoding="utf-8", newline="") as out:
                counts = await export_papers(store, scope, facets, WRITERS[writer_format](out))
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        os.replace(part, target)
        return counts
