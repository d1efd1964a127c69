"""Whether a process known by its pid still runs on this host (psutil), and which lease owners
(host:pid, as a store records them) are processes of this host that are gone.

A zombie (ended, its parent not yet told) does not: its pid stays taken until the parent reaps
it, which a busy parent may not do soon. A pid taken again by a later process is caught when the
caller knows a moment the recorded process ran (e.g. when it recorded itself): a process created
after that moment is another one. Without that moment, a reused pid looks alive.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable

import psutil

# Create times are read in clock ticks since boot (1/100 s on Linux) and the boot time itself
# is rounded: a process created this close after the moment is taken for the one that ran then.
CREATE_TIME_SLACK_S = 1.0


def process_running(pid: int, *, known_at: float | None = None) -> bool:
    """Whether `pid` runs and is not a zombie; with `known_at` (a Unix time the process was known
    to run), also that it was created by then, i.e. the pid was not taken again since."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return known_at is None or process.create_time() <= known_at + CREATE_TIME_SLACK_S
    except psutil.NoSuchProcess:  # ZombieProcess too
        return False
    except psutil.AccessDenied:
        return True  # another user's process: it exists


def dead_lease_owners(owners: Iterable[str]) -> list[str]:
    """The lease owners (host:pid) that are processes of this host no longer running.

    An owner of another host, or that is not host:pid (another client of the store), is left to
    its lease.
    """
    host = f"{socket.gethostname()}:"
    return [
        owner
        for owner in owners
        if owner.startswith(host)
        and owner[len(host) :].isdigit()
        and not process_running(int(owner[len(host) :]))
    ]
