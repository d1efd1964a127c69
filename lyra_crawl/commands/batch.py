"""`scrapy batch FILE [--processes N | --scrapyd URL[,URL…]]`: record a batch file's queries and
crawl them all; `scrapy batch --resume ID` continues a recorded batch.

The batch and its entries are recorded in the store (`batches`, `batch_entries`), then run as
ONE crawl (`scrapy crawl serp -a batch=ID`): one crawler, one downloader, one store handle,
however many queries, at most `--concurrency` of them running at once. With --processes that
crawl runs in N processes here (lyra_crawl.batch.workers), given this command's settings; with
--scrapyd it is one Scrapyd job per node given, and the command waits for them, printing their
states; the jobs get this run's LYRA_* settings, so they write to the store this command reads,
and where that store and the coordinator are when their URLs hold a password (a node takes those
from its own environment, and its job refuses to start when they name another place or none:
lyra_crawl.batch.targets). A refused job is printed as `refused` with its reason, read from the
job's log.
Either way each crawl takes entries from the store under a lease as it has room
(lyra_crawl.session.launch).

Progress while the batch runs (lyra_crawl.batch.display): a live table when stderr is a
terminal, else a plain line every LYRA_PROGRESS_INTERVAL seconds. Here the crawl's
BatchProgressExtension shows it; with --processes or --scrapyd this command reads the same
figures from the store between two looks at the crawls, and prints its lines on stdout.

Running the same file again while its batch is unfinished (killed, stopped) continues it, as
`--resume ID` does by the batch's id (the file is not read again): done entries are skipped, the
others run; a batch with nothing left to run is only summed up. Entries with a fresh cache entry
are skipped when the batch is recorded. A bad entry is reported with its position and the rest
still run. Exit status: 0 when every entry succeeded, 1 when any failed or was rejected (or a
crawl process crashed, or a Scrapyd job refused to start: when every one did, the command says so
and ends), 2 when the file, config or store is unusable (or the batch to resume is not in the
store).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES, Settings
from scrapy.utils.conf import get_config

from lyra_crawl.backend_urls import urls_from_settings
from lyra_crawl.backends import Backends, open_backends, run_sync
from lyra_crawl.backends.protocols import BatchReports, ResultStore
from lyra_crawl.batch.display import ProgressDisplay
from lyra_crawl.batch.files import (
    CACHED,
    SUMMARY_ENTRIES,
    UNSUCCESSFUL_STATES,
    Batch,
    BatchEnd,
    BatchError,
    entry_specs,
    load_batch,
    summary_lines,
)
from lyra_crawl.batch.progress import BatchMonitor
from lyra_crawl.batch.targets import EXPECTED
from lyra_crawl.batch.workers import crawl_command, run_crawls
from lyra_crawl.commands.process_start import FreezeAtStart
from lyra_crawl.config import ConfigError, load_config
from lyra_crawl.records import BackendError, BatchRecord

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class NoNodeRan(RuntimeError):
    """No node ran the batch: Scrapyd could not schedule its jobs, or every job refused."""


class Command(FreezeAtStart, ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[options] FILE | --resume ID"

    def short_desc(self) -> str:
        return "Crawl every query of a batch file in one crawl, here or on Scrapyd"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--resume",
            type=int,
            metavar="ID",
            help="continue batch ID as recorded in the store (its pending and running entries), "
            "instead of recording a file",
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            metavar="N",
            help="queries running at once (default: two per engine the batch may choose)",
        )
        parser.add_argument(
            "--processes",
            type=int,
            default=1,
            metavar="N",
            help="crawl in N processes here, sharing the store's entries (default 1; up to one "
            "per CPU core when the engines allow more requests than one process parses)",
        )
        parser.add_argument(
            "--scrapyd",
            metavar="URL[,URL...]",
            help="run the crawl on Scrapyd: one job per node, sharing the store's entries",
        )
        parser.add_argument(
            "--project",
            help="Scrapyd project (default the [deploy] project in scrapy.cfg, else lyra_crawl)",
        )
        parser.add_argument(
            "--poll-interval",
            type=float,
            default=2.0,
            metavar="SECONDS",
            help="with --scrapyd, seconds between two looks at listjobs.json (default 2)",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            metavar="SECONDS",
            help="with --scrapyd, stop waiting after this long (default until it is done)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if opts.resume is not None and args:
            raise UsageError("give a batch file or --resume ID, not both")
        if opts.resume is None and len(args) != 1:
            raise UsageError("give one batch file: scrapy batch FILE (or scrapy batch --resume ID)")
        if opts.concurrency is not None and opts.concurrency < 1:
            raise UsageError("--concurrency must be 1 or more")
        if opts.processes < 1:
            raise UsageError("--processes must be 1 or more")
        nodes = None if opts.scrapyd is None else scrapyd_nodes(opts.scrapyd)
        if nodes == []:
            raise UsageError("--scrapyd needs a URL, or several separated by commas")
        if nodes and opts.processes > 1:
            raise UsageError(
                "--processes runs crawls here; with --scrapyd give one URL per job instead"
            )
        try:
            if opts.resume is None:
                record, rejected = self._read_and_record(args[0])
            else:
                record, rejected = run_sync(self._resumed(opts.resume)), []
        except (BatchError, ConfigError, BackendError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exitcode = EXIT_BAD_INPUT
            return
        for message in rejected:
            print(f"error: {message}", file=sys.stderr)
        failed: list[str] = []
        if record is None:
            pass  # resumed, with nothing left to run: summed up below
        elif nodes:
            try:
                failed = self._crawl_on_scrapyd(record, nodes, opts)
            except NoNodeRan as exc:
                print(f"error: {exc}", file=sys.stderr)
                self.exitcode = EXIT_FAILED
                return
        elif opts.processes > 1:
            failed = self._crawl_in_processes(record, opts)
        else:
            self._crawl_here(record, opts)
        batch_id = opts.resume if record is None else record.id
        end = run_sync(self._end(batch_id))
        print("\n".join(summary_lines(end, batch_id)))
        for failure in failed:
            print(f"error: {failure}", file=sys.stderr)
        self.exitcode = 0 if end.all_succeeded and not failed else EXIT_FAILED

    def _read_and_record(self, path: str) -> tuple[BatchRecord, list[str]]:
        """The batch file's record and what it says of each entry it rejected. The file's
        entries are not kept: the crawl takes them from the store, so memory stays flat."""
        batch = load_batch(path, load_config(self.settings.get("LYRA_CONFIG_DIR")))
        return run_sync(self._record(path, batch)), [entry.message for entry in batch.rejected]

    async def _record(self, path: str, batch: Batch) -> BatchRecord:
        """The unfinished batch of this file to continue, or a new one with its entries."""
        backends = await open_backends(urls_from_settings(self.settings))
        try:
            store = backends.store
            earlier = await store.batch_by_hash(batch.content_hash)
            if earlier is not None and await _unfinished(store, earlier.id):
                print(f"continuing batch {earlier.id} of {path}", flush=True)
                return earlier
            record = await store.create_batch(
                source=path, content_hash=batch.content_hash, entries=entry_specs(batch)
            )
            print(f"batch {record.id}: {record.entries} entries from {path}", flush=True)
            await _skip_cached(store, record, batch)
            return record
        finally:
            await backends.close()

    async def _resumed(self, batch_id: int) -> BatchRecord | None:
        """Batch `batch_id`'s record to continue, None when it has nothing left to run."""
        backends = await open_backends(urls_from_settings(self.settings))
        try:
            store = backends.store
            record = await store.batch(batch_id)
            if record is None:
                raise BatchError(
                    f"batch {batch_id} is not in {store.url}: give the id `scrapy batch` "
                    "printed, with LYRA_DB_URL naming the store it recorded the batch in"
                )
            if not await _unfinished(store, batch_id):
                print(f"batch {batch_id} of {record.source} has no entry left to run", flush=True)
                return None
            print(f"continuing batch {batch_id} of {record.source}", flush=True)
            return record
        finally:
            await backends.close()

    async def _end(self, batch_id: int) -> BatchEnd:
        backends = await open_backends(urls_from_settings(self.settings))
        try:
            return await batch_end(backends.store, batch_id)
        finally:
            await backends.close()

    def _crawl_here(self, record: BatchRecord, opts: argparse.Namespace) -> None:
        # Imported by the commands that crawl here (Scrapy imports every command to list them).
        from lyra_crawl.spiders.serp import SerpSpider

        assert self.crawler_process is not None
        self.crawler_process.crawl(SerpSpider, **_spider_args(record, opts))
        self.crawler_process.start()

    def _crawl_in_processes(self, record: BatchRecord, opts: argparse.Namespace) -> list[str]:
        """Run the batch as `--processes` crawls here and wait for them; what each one that
        crashed (killed, or exited for a reason other than a failed query) says of itself."""
        # The crawls show no progress of their own: this command shows it for all of them.
        settings = {**_command_line_settings(self.settings), "LYRA_PROGRESS_INTERVAL": "0"}
        progress = _StoreProgress(self.settings, record.id)
        try:
            exits = run_crawls(
                opts.processes,
                crawl_command(_spider_args(record, opts), settings),
                on_poll=progress.poll,
            )
        finally:
            progress.close()
        return [
            f"{crawl.describe()}; its log above says why"
            for crawl in exits
            if crawl.status not in (0, EXIT_FAILED)
        ]

    def _crawl_on_scrapyd(
        self, record: BatchRecord, nodes: list[str], opts: argparse.Namespace
    ) -> list[str]:
        """Run the batch as Scrapyd jobs and wait for them; the jobs that refused to start (their
        node does not store or coordinate where the batch does). NoNodeRan when Scrapyd could
        not schedule them, or every job refused."""
        # Imported here, as only --scrapyd needs them: every `scrapy` command (each crawl
        # included) imports this module, and scrapyd-client with requests takes 20-60 ms.
        from scrapyd_client.pyclient import ScrapydClient

        from lyra_crawl.batch.scrapyd import (
            FINISHED,
            Job,
            SchedulingError,
            job_refusal,
            job_settings,
            schedule_crawl,
            wait_for_jobs,
        )

        project = opts.project or get_config().get("deploy", "project", fallback="lyra_crawl")
        spider_args = _spider_args(record, opts)
        settings = job_settings(self.settings)
        _note_withheld(settings.withheld, settings.forwarded)
        refused: list[str] = []

        def changed(job: Job, state: str) -> None:
            where = f"job {job.id} on {job.client.url}"
            reason = None
            if state == FINISHED:
                try:
                    reason = job_refusal(job, project)
                except SchedulingError as exc:  # judged by the store alone, as before
                    print(f"note: {exc}", flush=True)
            if reason is None:
                print(f"batch {record.id}: {state} ({where})", flush=True)
                return
            print(f"batch {record.id}: refused ({where}): {reason}", flush=True)
            refused.append(f"{where} refused to start: {reason}")

        try:
            jobs = [
                schedule_crawl(ScrapydClient(url), project, spider_args, settings) for url in nodes
            ]
            progress = _StoreProgress(self.settings, record.id)
            try:
                wait_for_jobs(
                    jobs,
                    project,
                    poll_interval=opts.poll_interval,
                    timeout=opts.timeout,
                    on_change=changed,
                    on_poll=progress.poll,
                )
            finally:
                progress.close()
        except SchedulingError as exc:
            raise NoNodeRan(str(exc)) from exc
        if len(refused) == len(jobs):
            raise NoNodeRan(
                f"no node could run batch {record.id}: every job refused to start (above), its "
                "entries are left pending; set the nodes up (docs/deployment.md), check them "
                "with `scrapy nodes --scrapyd …`, then run the same file again"
            )
        return refused


def _note_withheld(withheld: dict[str, str], forwarded: dict[str, str]) -> None:
    """A `note:` for each secret the jobs are not given, and for a backend's URL where they then
    expect to find it."""
    for name, secret in withheld.items():
        note = (
            f"note: {name} holds {secret}, so it is not sent with the jobs (Scrapyd logs "
            "their arguments): each node's Scrapyd must have it in its environment"
        )
        if name in EXPECTED:
            note += (
                f"; a job refuses to start on a node whose {name} does not name "
                f"{forwarded[EXPECTED[name]]}"
            )
        print(note, flush=True)


def scrapyd_nodes(value: str) -> list[str]:
    """The nodes of `--scrapyd URL[,URL…]`, in order, each once."""
    return list(dict.fromkeys(url.strip().rstrip("/") for url in value.split(",") if url.strip()))


class _StoreProgress:
    """The batch's progress read from the store while this command waits for its job."""

    def __init__(self, settings: Settings, batch_id: int) -> None:
        self._settings = settings
        self._batch_id = batch_id
        self._interval = settings.getfloat("LYRA_PROGRESS_INTERVAL")
        self._opened: tuple[Backends, BatchMonitor, ProgressDisplay] | None = None

    def poll(self) -> None:
        if self._interval <= 0:
            return
        if self._opened is None:
            self._opened = run_sync(self._open())
        backends, monitor, display = self._opened
        if display.due(monitor.read_s):
            display.show(run_sync(monitor.figures(backends.store)))

    def close(self) -> None:
        if self._opened is not None:
            backends, monitor, display = self._opened
            display.close(run_sync(monitor.figures(backends.store)))
            run_sync(backends.close())

    async def _open(self) -> tuple[Backends, BatchMonitor, ProgressDisplay]:
        settings = self._settings
        backends = await open_backends(urls_from_settings(settings))
        monitor = BatchMonitor(
            self._batch_id,
            load_config(settings.get("LYRA_CONFIG_DIR")),
            rate_limited=settings.getbool("LYRA_RATE_LIMIT_ENABLED"),
        )
        return backends, monitor, ProgressDisplay(interval_s=self._interval, emit=_print_line)


def _print_line(line: str) -> None:
    print(line, flush=True)


def _command_line_settings(settings: Settings) -> dict[str, str]:
    """The settings given on this command's line (-s, -L, --logfile …), for crawls it starts:
    everything else they read as this command did (environment, settings.py, scrapy.cfg)."""
    given = SETTINGS_PRIORITIES["cmdline"]
    return {name: str(settings[name]) for name in settings if settings.getpriority(name) == given}


def _spider_args(record: BatchRecord, opts: argparse.Namespace) -> dict[str, str]:
    """`serp -a batch=ID [-a concurrency=N]`; without N the crawl takes its default."""
    args = {"batch": str(record.id)}
    if opts.concurrency is not None:
        args["concurrency"] = str(opts.concurrency)
    return args


async def batch_end(store: BatchReports, batch_id: int) -> BatchEnd:
    """How a batch ended, read without holding a large batch's every entry at once: its
    counts, and the first entries that did not succeed."""
    progress = await store.batch_progress(batch_id)
    if progress.total_entries <= SUMMARY_ENTRIES:
        return BatchEnd.of(await store.batch_entries(batch_id))
    unsuccessful, total = await store.batch_entries_in(
        batch_id, UNSUCCESSFUL_STATES, limit=SUMMARY_ENTRIES
    )
    return BatchEnd.counted(progress, unsuccessful, total)


async def _skip_cached(store: ResultStore, record: BatchRecord, batch: Batch) -> None:
    """Mark done the entries a fresh cache entry answers: they need no crawl. The entries'
    ids are read once the first is answered, not for a batch the cache answers none of."""
    now = datetime.now(UTC)
    ids: dict[int, int] = {}
    for entry in batch.entries:
        cached = await store.fresh_cache_entry(entry.cache_key, now) if entry.cache_key else None
        if cached is not None:
            ids = ids or {
                taken.position: taken.id for taken in await store.batch_entries(record.id)
            }
            await store.finish_entry(
                ids[entry.position], state="done", query_id=cached, detail=CACHED
            )
            print(f"entry {entry.position}: skipped, fresh in the cache (query {cached})")


async def _unfinished(store: BatchReports, batch_id: int) -> bool:
    """Whether entries of the batch are still to run (counted, not read)."""
    _, count = await store.batch_entries_in(batch_id, ("pending", "running"), limit=0)
    return count > 0
