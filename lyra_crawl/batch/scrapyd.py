"""Schedule `serp` crawls on Scrapyd through schedule.json and wait for them.

Scrapyd's listjobs.json says "finished" for a job that crashed as well as for one that
succeeded, so the caller judges each job from its own row in the queries table (job_id), and
reads a job that never started its crawl (its node does not store or coordinate where the job
expects, lyra_crawl.batch.targets) from the job's log (`job_refusal`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import requests
from requests import RequestException
from scrapyd_client.exceptions import ErrorResponse, MalformedResponse
from scrapyd_client.pyclient import ScrapydClient

from lyra_crawl.backend_urls import absolute_url, sqlite_path, urls_from_settings
from lyra_crawl.batch.targets import REFUSED, NodeReport, expected_targets
from lyra_crawl.quoting import redact_url

SPIDER = "serp"
# What `scrapy nodes` schedules (lyra_crawl.spiders.node_check).
NODE_CHECK = "node_check"
# Settings that hold a secret whatever their value (LYRA_S2_API_KEY, LYRA_OPENALEX_API_KEY).
SECRET_SUFFIX = "_API_KEY"
FINISHED = "finished"
# Not listed at all: Scrapyd was restarted, or the job fell off its finished_to_keep list.
UNKNOWN = "unknown"
# A refusal is logged before the crawl starts: the head of the log says it (Scrapyd serves logs
# with HTTP ranges), however long the log of a crawl that ran.
LOG_HEAD_BYTES = 65536
RANGE_NOT_SATISFIABLE = 416


class SchedulingError(RuntimeError):
    """Scrapyd cannot be reached or refused a request; the message says which and why."""


def schedule_crawl(
    client: ScrapydClient,
    project: str,
    spider_args: Mapping[str, str],
    settings: JobSettings,
    spider: str = SPIDER,
) -> Job:
    """Schedule one job of `spider` on the node `client` talks to, with `settings` (what
    `job_settings` made of the run's: so every job says where it must store and coordinate)."""
    args = [("setting", f"{name}={value}") for name, value in settings.forwarded.items()]
    args += list(spider_args.items())
    try:
        return Job(client, client.schedule(project, spider, args=args))
    except (ErrorResponse, MalformedResponse, RequestException) as exc:
        raise SchedulingError(
            f"Scrapyd at {client.url} refused to schedule {spider} in project {project!r} "
            f"({exc}): check the URL and that the project is deployed (scrapyd-deploy)"
        ) from exc


@dataclass(frozen=True)
class Job:
    """A job scheduled on one Scrapyd node."""

    client: ScrapydClient
    id: str


def job_states(client: ScrapydClient, project: str) -> dict[str, str]:
    """Every job Scrapyd knows in `project`, by id: pending, running or finished."""
    listing = _listing(client, project)
    return {
        job["id"]: state for state in ("pending", "running", FINISHED) for job in listing[state]
    }


def _listing(client: ScrapydClient, project: str) -> dict[str, Any]:
    try:
        return client.jobs(project)
    except (ErrorResponse, MalformedResponse, RequestException) as exc:
        raise SchedulingError(f"cannot list jobs on Scrapyd at {client.url} ({exc})") from exc


def job_log(job: Job, project: str, *, head_bytes: int | None = None) -> str | None:
    """The job's log as its node serves it (its first `head_bytes`); None when the node keeps
    no log of it (Scrapyd's `logs_dir` is empty) or no longer knows the job."""
    listing = _listing(job.client, project)
    known = [entry for state in ("running", FINISHED) for entry in listing[state]]
    log_url = next((entry.get("log_url") for entry in known if entry["id"] == job.id), None)
    if not log_url:
        return None
    headers = {} if head_bytes is None else {"Range": f"bytes=0-{head_bytes - 1}"}
    url = job.client.url.rstrip("/") + log_url
    try:
        response = requests.get(url, headers=headers, auth=job.client.auth, timeout=30)
        if response.status_code == RANGE_NOT_SATISFIABLE:  # an empty log has no first byte
            return ""
        response.raise_for_status()
    except RequestException as exc:
        raise SchedulingError(f"cannot read the log of job {job.id} at {url} ({exc})") from exc
    return response.content.decode("utf-8", errors="replace")


def job_refusal(job: Job, project: str) -> str | None:
    """Why the finished `job` refused to start its crawl, None if it did not (or its node
    keeps no log)."""
    log = job_log(job, project, head_bytes=LOG_HEAD_BYTES)
    for line in (log or "").splitlines():
        _, marker, reason = line.partition(REFUSED)
        if marker:
            return reason.strip()
    return None


def check_nodes(
    nodes: Collection[str], project: str, settings: JobSettings, *, timeout: float
) -> dict[str, NodeReport | str]:
    """Schedule a node_check job on each node and wait for them: each node's report, or what
    kept it from giving one."""
    found: dict[str, NodeReport | str] = {}
    jobs: list[Job] = []
    for url in nodes:
        try:
            jobs.append(schedule_crawl(ScrapydClient(url), project, {}, settings, NODE_CHECK))
        except SchedulingError as exc:
            found[url] = str(exc)
    try:
        states = wait_for_jobs(jobs, project, poll_interval=0.5, timeout=timeout)
    except SchedulingError as exc:
        found.update((job.client.url, str(exc)) for job in jobs)
        jobs, states = [], {}
    for job in jobs:
        if states.get(job.id) != FINISHED:
            found[job.client.url] = (
                f"its {NODE_CHECK} job {job.id} did not finish within {timeout:.0f} s "
                f"({states.get(job.id)}): is every process slot of the node busy?"
            )
            continue
        try:
            found[job.client.url] = _node_report(job, project)
        except SchedulingError as exc:
            found[job.client.url] = str(exc)
    return {url: found[url] for url in nodes}


def _node_report(job: Job, project: str) -> NodeReport | str:
    report = NodeReport.from_log(job_log(job, project) or "")
    if report is not None:
        return report
    return job_refusal(job, project) or (
        f"its {NODE_CHECK} job {job.id} left no report in its log: is the node's Scrapyd "
        "logs_dir set, and this version of the project deployed there (scrapyd-deploy)?"
    )


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


@dataclass(frozen=True)
class JobSettings:
    """The settings a job is given (`forwarded`), and those left out because they hold a secret
    (name -> what kind)."""

    forwarded: dict[str, str]
    withheld: dict[str, str]


def job_settings(settings: Mapping[str, Any]) -> JobSettings:
    """This run's LYRA_* settings for each job, so jobs write where the batch reads.

    The backends' URLs are always sent as this run resolved them (so a node's own defaults
    cannot point its job elsewhere), except a URL with a password; API keys are never sent:
    Scrapyd writes every job argument to its log and the job's command line, so secrets must
    come from each node's own environment. What the job is told instead is where its store and
    coordinator are (LYRA_EXPECT_DB, LYRA_EXPECT_COORDINATION: no user, no password), and it
    refuses to start on a node that resolves them elsewhere (lyra_crawl.batch.targets). Paths
    (names ending in _PATH or _DIR, and SQLite URLs) are made absolute: Scrapyd runs jobs from
    its own folder. Unset or empty settings are left to the job's own defaults.
    """
    urls = urls_from_settings(settings)
    store_file = sqlite_path(urls.store)
    resolved = {
        "LYRA_DB_URL": urls.store,
        # Also the file under its older name: a node whose environment sets LYRA_DB_PATH would
        # otherwise find two names for two databases.
        "LYRA_DB_PATH": None if store_file is None else str(store_file),
        "LYRA_COORDINATION_URL": urls.coordination,
        **expected_targets(urls),
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
    return JobSettings(forwarded, withheld)
