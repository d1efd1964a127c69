"""Start the simulator in a child process and wait until it listens (demo, tests, benchmarks)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

READY_PREFIX = "listening on "


@contextmanager
def running_simulator(options: Sequence[str] = ()) -> Iterator[str]:
    """Yield the base URL of a simulator started with `options`; stop it afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lyra_crawl.simulator", "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline().strip() if process.stdout else ""
        if not line.startswith(READY_PREFIX):
            error = process.stderr.read() if process.stderr else ""
            raise RuntimeError(f"simulator did not start: {line or error}")
        yield line[len(READY_PREFIX) :]
    finally:
        stop_process(process, timeout=10)


def stop_process(process: subprocess.Popen[Any], timeout: float) -> None:
    """Terminate `process`, killing it if it has not exited after `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
