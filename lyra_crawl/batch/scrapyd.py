"""Schedule `serp` crawls on Scrapyd through schedule.json and wait for them.

Scrapyd's listjobs.json says "finished" for a job that crashed as well as for one that
succeeded, so the caller judges each job from its own row in the queries table (job_id).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from requests import RequestException
from scrapyd_client.exceptions import ErrorResponse, MalformedResponse
from scrapyd_client.pyclient import ScrapydClient

from lyra_crawl.backends import absolute_url, redact_url, sqlite_path, urls_from_settings

SPIDER = "serp"
# Settings that hold a secret whatever their value (LYRA_S2_API_KEY, LYRA_OPENALEX_API_KEY).
SECRET_SUFFIX = "_API_KEY"
FINISHED = "finished"
# Not listed at all: Scrapyd was restarted, or the job fell off its finished_to_keep list.
UNKNOWN = "unknown"


class SchedulingError(RuntimeError):
    """Scrapyd cannot be reached or refused a request; the message says which and why."""


def schedule_crawl(
    client: ScrapydClient, project: str, spider_args: Mapping[str, str], settings: Mapping[str, str]
) -> Job:
    """Schedule one `serp` job on the node `client` talks to."""
    args = [("setting", f"{name}={value}") for name, value in settings.items()]
    args += list(spider_args.items())
    try:
        return Job(client, client.schedule(project, SPIDER, args=args))
    except (ErrorResponse, MalformedResponse, RequestException) as exc:
        raise SchedulingError(
            f"Scrapyd at {client.url} refused to schedule {SPIDER} in project {project!r} "
            f"({exc}): check the URL and that the project is deployed (scrapyd-deploy)"
        ) from exc


@dataclass(frozen=True)
class Job:
    """A job scheduled on one Scrapyd node."""

    client: ScrapydClient
    id: str


def job_states(client: ScrapydClient, project: str) -> dict[str, str]:
    """Every job Scrapyd knows in `project`, by id: pending, running or finished."""
    try:
        listing = client.jobs(project)
    except (ErrorResponse, MalformedResponse, RequestException) as exc:
        raise SchedulingError(f"cannot list jobs on Scrapyd at {client.url} ({exc})") from exc
    return {
        job["id"]: state for state in ("pending", "running", FINISHED) for job in listing[state]
    }


def wait_for_jobs(
    jobs: Collection[Job],
    project: str,
    *,
    poll_interval: float = 1.0,
    timeout: float | None = None,
    on_change: Callable[[Job, str], None] | None = None,
    on_poll: Callable[[], None] | None = None,
) -> dict[str, str]:
    """Poll each node's listjobs.json until every job has finished (or is unknown) or
    `timeout` passed.

    Returns the last state seen per job id; `on_change(job, state)` is called whenever a
    job's state changes, `on_poll()` after every look (the batch command's progress).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    states: dict[str, str] = {}
    clients = {job.client.url: job.client for job in jobs}
    while True:
        known = {url: job_states(client, project) for url, client in clients.items()}
        for job in jobs:
            state = known[job.client.url].get(job.id, UNKNOWN)
            if states.get(job.id) != state:
                states[job.id] = state
                if on_change is not None:
                    on_change(job, state)
        if on_poll is not None:
            on_poll()
        if all(states[job.id] in (FINISHED, UNKNOWN) for job in jobs):
            return states
        if deadline is not None and time.monotonic() >= deadline:
            return states
        time.sleep(poll_interval)


def job_settings(settings: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """This run's LYRA_* settings for each job, so jobs write where the batch reads, and the
    settings left out because they hold a secret (name -> what kind).

    The backends' URLs are always sent as this run resolved them (so a node's own defaults
    cannot point its job elsewhere), except a URL with a password; API keys are never sent:
    Scrapyd writes every job argument to its log and the job's command line, so secrets must
    come from each node's own environment. Paths (names ending in _PATH or _DIR, and SQLite
    URLs) are made absolute: Scrapyd runs jobs from its own folder. Unset or empty settings are
    left to the job's own defaults.
    """
    urls = urls_from_settings(settings)
    store_file = sqlite_path(urls.store)
    resolved = {
        "LYRA_DB_URL": urls.store,
        # Also the file under its older name: a node whose environment sets LYRA_DB_PATH would
        # otherwise find two names for two databases.
        "LYRA_DB_PATH": None if store_file is None else str(store_file),
        "LYRA_COORDINATION_URL": urls.coordination,
    }
    forwarded: dict[str, str] = {}
    withheld: dict[str, str] = {}
    for name in sorted({*(n for n in settings if n.startswith("LYRA_")), *resolved}):
        value = resolved[name] if name in resolved else settings.get(name)
        if value is None or value == "":
            continue
        if name.endswith(SECRET_SUFFIX):
            withheld[name] = "an API key"
            continue
        if name.endswith(("_PATH", "_DIR")):
            value = os.path.abspath(value)
        elif name.endswith("_URL"):
            if redact_url(str(value)) != str(value):
                withheld[name] = "a password"
                continue
            value = absolute_url(str(value))
        forwarded[name] = str(value)
    return forwarded, withheld
