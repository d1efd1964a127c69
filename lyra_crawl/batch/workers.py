"""Run a stored batch's crawl in several processes on this machine and wait for them.

One crawl process parses on one core (Python's GIL); a batch whose engines allow more requests
than one core can parse (high qps, heavy pages) is CPU-bound. `scrapy batch --processes N`
therefore starts N `scrapy crawl serp -a batch=ID` processes, as Scrapyd would on N nodes: each
takes entries from the store under a lease as it has room, and the engines' quota, rate slot and
breaker stay exact across them (the Coordinator).

The crawls run in their own process group, so a Ctrl-C on the terminal reaches this process
alone, which hands each signal (SIGINT, SIGTERM) to every crawl once: the first stops them
gracefully (their running entries go back to pending), a second one forcefully, as for one
crawl. Should this process die without handing anything on (`kill -9`, the out-of-memory
killer), each crawl stops as on one SIGTERM (`stop_with_batch_command`, Linux's
PR_SET_PDEATHSIG): no crawl goes on unseen. Their stderr (their logs) comes here line by line,
each line prefixed with the crawl's number, and is written to this process's stderr, so a live
progress table stays whole.
"""

from __future__ import annotations

import ctypes
import logging
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType

logger = logging.getLogger(__name__)

SPIDER = "serp"
# Set in each crawl's environment: the pid of the batch command that started it.
BATCH_COMMAND_PID = "LYRA_BATCH_COMMAND_PID"
# prctl(2): the signal the kernel sends this process when its parent dies.
_PR_SET_PDEATHSIG = 1
# The signal the kernel sends a crawl when its batch command dies (stop_with_batch_command).
_PARENT_DIED = signal.SIGHUP
# How often the crawls' output and exits are looked at while nothing arrives, in seconds.
LOOK_S = 0.25
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def crawl_command(spider_args: Mapping[str, str], settings: Mapping[str, str]) -> list[str]:
    """`python -m scrapy crawl serp -a NAME=VALUE … -s NAME=VALUE …` with this interpreter."""
    command = [sys.executable, "-m", "scrapy", "crawl", SPIDER]
    for name, value in spider_args.items():
        command += ["-a", f"{name}={value}"]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    return command


@dataclass(frozen=True)
class CrawlExit:
    """How one crawl process ended: its number (1..N), pid and exit status (negative: the
    signal that killed it)."""

    number: int
    pid: int
    status: int

    def describe(self) -> str:
        if self.status < 0:
            how = f"was killed by {signal.Signals(-self.status).name}"
        else:
            how = f"exited with status {self.status}"
        return f"crawl process {self.number} (pid {self.pid}) {how}"


def run_crawls(
    count: int, command: list[str], *, on_poll: Callable[[], None] | None = None
) -> list[CrawlExit]:
    """Start `count` processes running `command` from the current folder, relay their stderr
    and signals until every one has ended; `on_poll()` is called between two looks. Should
    this process fail meanwhile (on_poll raised), the crawls are stopped (SIGTERM) first."""
    environment = {**os.environ, BATCH_COMMAND_PID: str(os.getpid())}
    crawls = [
        subprocess.Popen(command, stderr=subprocess.PIPE, process_group=0, env=environment)
        for _ in range(count)
    ]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for crawl in crawls:
            if crawl.poll() is None:
                crawl.send_signal(signum)

    earlier = {signum: signal.signal(signum, forward) for signum in FORWARDED_SIGNALS}
    try:
        _relay(crawls, on_poll)
    except BaseException:
        forward(signal.SIGTERM, None)
        for crawl in crawls:
            crawl.wait()
        raise
    finally:
        for signum, handler in earlier.items():
            signal.signal(signum, handler)
    return [CrawlExit(number, crawl.pid, crawl.wait()) for number, crawl in enumerate(crawls, 1)]


def stop_with_batch_command() -> None:
    """In a crawl the batch command started (BATCH_COMMAND_PID set): stop it gracefully, one
    SIGTERM, when the command dies however it dies; at once if it already has.

    The kernel sends the death signal each time the crawl's parent thread dies, and a dying
    command's threads die one after another, the crawl passed on from each to the next: two
    SIGTERMs would force an unclean shutdown. The death signal is SIGHUP, turned into one
    SIGTERM."""
    command_pid = os.environ.get(BATCH_COMMAND_PID)
    if command_pid is None:
        return
    signal.signal(_PARENT_DIED, _terminate_once)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        asked = libc.prctl(_PR_SET_PDEATHSIG, _PARENT_DIED, 0, 0, 0) == 0
    except (AttributeError, OSError):  # not Linux
        asked = False
    if not asked:
        logger.warning("this crawl cannot ask to stop with its batch command: kill it with it")
    if os.getppid() != int(command_pid):
        _terminate_once(_PARENT_DIED, None)


def _terminate_once(signum: int, frame: FrameType | None) -> None:
    signal.signal(_PARENT_DIED, signal.SIG_IGN)
    os.kill(os.getpid(), signal.SIGTERM)


def _relay(crawls: list[subprocess.Popen[bytes]], on_poll: Callable[[], None] | None) -> None:
    """Copy each crawl's stderr to this process's, line by line with its number, until all are
    closed."""
    with selectors.DefaultSelector() as selector:
        for number, crawl in enumerate(crawls, 1):
            assert crawl.stderr is not None
            selector.register(crawl.stderr, selectors.EVENT_READ, _Lines(number))
        while selector.get_map():
            for key, _ in selector.select(LOOK_S):
                lines: _Lines = key.data
                chunk = os.read(key.fd, 65536)
                if chunk:
                    lines.feed(chunk)
                else:
                    lines.flush()
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
            if on_poll is not None:
                on_poll()


class _Lines:
    """One crawl's stderr, cut into whole lines, each written with the crawl's number to
    sys.stderr as it is when the line comes (a live progress table's proxy while one is up)."""

    def __init__(self, number: int) -> None:
        self._prefix = f"[crawl {number}] "
        self._partial = b""

    def feed(self, chunk: bytes) -> None:
        *whole, self._partial = (self._partial + chunk).split(b"\n")
        if whole:
            self._write(whole)

    def flush(self) -> None:
        if self._partial:
            self._write([self._partial])
            self._partial = b""

    def _write(self, lines: list[bytes]) -> None:
        sys.stderr.write(
            "".join(f"{self._prefix}{line.decode(errors='replace')}\n" for line in lines)
        )
        sys.stderr.flush()
