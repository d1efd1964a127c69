"""A recorded pid's liveness: no such process, running, or taken again by a process
created after the moment the recorded one was known to run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from lyra_crawl.processes import process_running


def test_a_running_process_runs_and_a_pid_no_process_has_does_not():
    # Above the kernel's largest pid: no process has it.
    unused = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    assert process_running(os.getpid())
    assert not process_running(unused)


def test_a_pid_taken_again_after_the_recorded_moment_is_another_process():
    created = psutil.Process().create_time()
    # This process, recorded while it ran, is the same one...
    assert process_running(os.getpid(), known_at=time.time())
    assert process_running(os.getpid(), known_at=created)
    # ...but a row written a minute before it was created was another process's, whose pid
    # this one took again.
    assert not process_running(os.getpid(), known_at=created - 60)


@pytest.mark.subprocess
def test_a_zombie_is_a_dead_crawl_and_a_running_process_is_not():
    ended = subprocess.Popen([sys.executable, "-c", ""])
    # Not reaped yet: its pid stays taken, as a killed crawl's does until its parent looks.
    deadline = time.monotonic() + 30
    while Path(f"/proc/{ended.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert not process_running(ended.pid)
        assert process_running(os.getpid())
    finally:
        ended.wait()
    assert not process_running(ended.pid)
