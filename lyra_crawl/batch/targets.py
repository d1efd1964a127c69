"""The store and coordinator a Scrapyd job must use, named without their secrets, and what a
node resolves them to.

A URL with a password never travels with a job (Scrapyd logs job arguments): each node takes it
from its own environment. So that a node without it, or with another one, cannot quietly store
in a file of its own or keep quotas of its own, every job lyra schedules also gets the targets
of the run's store and coordinator (`backend_urls.backend_target`: scheme, host, port, database) as
LYRA_EXPECT_DB and LYRA_EXPECT_COORDINATION (`batch.scrapyd.job_settings`). The crawl command
compares them with what the node's own settings and environment resolve to, and refuses to
start on any difference, a missing URL included (`check_expected`): fail closed, never fall back.

A job writes why it refused to start in its log (REFUSED); `scrapy crawl node_check`, which
`scrapy nodes` schedules on each node, writes what the node resolves and whether it reaches it
(NODE_REPORT). Whoever scheduled the job reads both from the job's log, which Scrapyd
serves.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from lyra_crawl.backend_urls import BackendUrls, absolute_url, backend_target, urls_from_settings
from lyra_crawl.backends import try_backend
from lyra_crawl.quoting import redact_url
from lyra_crawl.records import BackendError

STORE = "LYRA_DB_URL"
COORDINATION = "LYRA_COORDINATION_URL"
# The setting that carries each backend's expected target with a job.
EXPECTED = {STORE: "LYRA_EXPECT_DB", COORDINATION: "LYRA_EXPECT_COORDINATION"}
ROLES = {STORE: "store", COORDINATION: "coordinator"}
_WHAT_JOB_DOES = {STORE: "stores in", COORDINATION: "coordinates through"}
# How a job's log line starts when the crawl command refused to start the crawl, and the line of
# `scrapy crawl node_check`'s report.
REFUSED = "refused to start: "
NODE_REPORT = "node check: "


class TargetMismatch(BackendError):
    """The node resolves the store or coordinator elsewhere than its job was scheduled for."""


def expected_targets(urls: BackendUrls) -> dict[str, str]:
    """The settings that tell a job where the run stores and coordinates, without secrets."""
    return {
        EXPECTED[STORE]: backend_target(urls.store),
        EXPECTED[COORDINATION]: backend_target(urls.coordination),
    }


@dataclass(frozen=True)
class Resolution:
    """What this node resolves one backend to, beside what its job expects."""

    setting: str  # LYRA_DB_URL or LYRA_COORDINATION_URL
    url: str  # without its password
    target: str
    given_by: str | None  # the setting that named it; None: the node's default stands in
    expected: str | None  # None: the job was told nothing
    reachable: bool | None = None  # None: not tried
    problem: str | None = None

    @property
    def role(self) -> str:
        return ROLES[self.setting]

    @property
    def matches(self) -> bool:
        return self.expected is None or self.expected == self.target

    @property
    def ready(self) -> bool:
        return self.matches and self.reachable is not False

    def describe(self) -> str:
        """Where it is, what named it, whether it is the expected place and reached."""
        named = f"its {self.given_by}" if self.given_by else f"{self.setting} not set: its default"
        where = f"{self.url} ({named})"
        if not self.matches:
            return f"{where}: WRONG, expected {self.expected}"
        if self.reachable is False:
            return f"{where}: UNREACHABLE"
        return f"{where}: {'' if self.expected is None else 'as expected, '}reachable"

    def mismatch(self) -> str:
        """Why a job refuses this node, and the fix."""
        if self.given_by is None:
            found = f"{self.setting} is not set on this node (its default: {self.url})"
        else:
            found = f"this node's {self.given_by} names {self.url}"
        return (
            f"this job {_WHAT_JOB_DOES[self.setting]} {self.expected}, but {found}: set "
            f"{self.setting} in this node's Scrapyd environment, see docs/deployment.md"
        )


def resolve(settings: Mapping[str, Any] | Any) -> list[Resolution]:
    """The store's and the coordinator's resolution on this node (BackendError if the
    settings contradict each other)."""
    return [resolution for resolution, _ in _resolved(settings)]


def _resolved(settings: Mapping[str, Any] | Any) -> list[tuple[Resolution, str]]:
    """Each backend's resolution, with the URL itself (its password included)."""
    urls = urls_from_settings(settings)
    given_by = {
        STORE: next((name for name in (STORE, "LYRA_DB_PATH") if settings.get(name)), None),
        COORDINATION: COORDINATION if settings.get(COORDINATION) else None,
    }
    return [
        (
            Resolution(
                setting=setting,
                url=redact_url(absolute_url(url)),
                target=backend_target(url),
                given_by=given_by[setting],
                expected=_target_or_none(settings.get(EXPECTED[setting])),
            ),
            url,
        )
        for setting, url in ((STORE, urls.store), (COORDINATION, urls.coordination))
    ]


def _target_or_none(url: str | None) -> str | None:
    # Given by hand (curl), the expected place may be spelled as any URL of it.
    return backend_target(url) if url else None


def check_expected(settings: Mapping[str, Any] | Any) -> None:
    """TargetMismatch unless this node stores and coordinates where its job expects."""
    problems = [found.mismatch() for found in resolve(settings) if not found.matches]
    if problems:
        raise TargetMismatch("; ".join(problems))


@dataclass(frozen=True)
class NodeReport:
    """What `scrapy crawl node_check` found on one node."""

    host: str
    backends: tuple[Resolution, ...]

    @property
    def ready(self) -> bool:
        return all(found.ready for found in self.backends)

    def problems(self) -> str:
        """Why the node is not ready, and the fixes; empty when it is."""
        return "; ".join(found.problem for found in self.backends if found.problem)

    def lines(self, node: str) -> list[str]:
        """The report for people: the node, then its store and its coordinator."""
        lines = [f"{node} (host {self.host}): {'ready' if self.ready else 'NOT READY'}"]
        lines += [f"  {found.role:<12} {found.describe()}" for found in self.backends]
        return lines

    def log_line(self) -> str:
        return NODE_REPORT + json.dumps(
            {"host": self.host, "backends": [asdict(b) for b in self.backends]}
        )

    @classmethod
    def from_log(cls, log: str) -> NodeReport | None:
        """The report a node_check job's log holds, None if it holds none."""
        for line in log.splitlines():
            _, marker, report = line.partition(NODE_REPORT)
            if marker:
                data = json.loads(report)
                return cls(data["host"], tuple(Resolution(**b) for b in data["backends"]))
        return None


async def node_report(settings: Mapping[str, Any] | Any) -> NodeReport:
    """What this node resolves its store and coordinator to, and whether it reaches each one
    that is where its job expects (one that is not is left unopened: no file of its own is
    made)."""
    found: list[Resolution] = []
    for resolution, url in _resolved(settings):
        if not resolution.matches:
            found.append(replace(resolution, problem=resolution.mismatch()))
            continue
        try:
            await try_backend(resolution.setting, url)
        except BackendError as exc:
            found.append(replace(resolution, reachable=False, problem=str(exc)))
        else:
            found.append(replace(resolution, reachable=True))
    return NodeReport(socket.gethostname(), tuple(found))
