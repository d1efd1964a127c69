"""Circuit breaker state machine per engine: closed -> open -> half-open -> closed. Pure.

The state lives in the database (`engine_health`) so every crawl sharing it sees one breaker;
storage applies these functions inside one write transaction. Closed admits everything. A block
page, or `failure_threshold` network failures in a row, opens it for the cool-down of that class
(breaker.cooldown_s in engines.yaml), doubled for each trip since the engine last worked, up to
breaker.max_cooldown_s. Once the cool-down has passed, the first request to ask becomes the one
half-open trial; everyone else is refused until the trial answers (or its lease runs out, in
case the process that owns it died). A good trial closes the breaker; a bad one opens it again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum

from lyra_crawl.config import BreakerPolicy

NETWORK = "network"


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True)
class Health:
    """One engine's row of `engine_health`; `open_until` is the trial's lease when half-open."""

    engine: str
    state: BreakerState = BreakerState.CLOSED
    open_until: float | None = None
    consecutive_failures: int = 0
    trips: int = 0
    last_reason: str | None = None
    trial_owner: str | None = None


@dataclass(frozen=True)
class Admission:
    """Whether one request may go out; `trial` marks the single half-open request.
    `unreachable`: refused because the engine's last failures were on the network, not blocks:
    its source stops on an error rather than a block."""

    allowed: bool
    trial: bool = False
    reason: str = ""
    unreachable: bool = False


def admit(
    health: Health, *, now: float, owner: str, trial_lease_s: float
) -> tuple[Admission, Health]:
    """Decide on one request and return the state after that decision."""
    if health.state is BreakerState.CLOSED:
        return Admission(True), health
    refusal = refusal_reason(health, now)
    if refusal is not None:
        return Admission(False, reason=refusal, unreachable=health.last_reason == NETWORK), health
    trial = replace(
        health, state=BreakerState.HALF_OPEN, open_until=now + trial_lease_s, trial_owner=owner
    )
    return Admission(True, trial=True, reason="half-open trial"), trial


def refuses_now(health: Health, now: float) -> bool:
    """Whether a request asking now would be refused (open, or a trial in flight)."""
    return health.state is not BreakerState.CLOSED and now < (health.open_until or 0.0)


def refusal_reason(health: Health, now: float) -> str | None:
    """Why a request asking now would be refused, or None if it would not be."""
    if not refuses_now(health, now):
        return None
    what = "is open" if health.state is BreakerState.OPEN else "is half-open, trial in flight"
    return f"breaker {what} until {_utc(health.open_until or 0.0)} ({health.last_reason})"


def cooldown_s(policy: BreakerPolicy, kind: str, trips: int, retry_after_s: float | None) -> float:
    """Cool-down of the `trips`-th trip in a row for block class `kind`."""
    base = retry_after_s if retry_after_s else policy.cooldown_s[kind]
    return min(base * 2 ** max(trips - 1, 0), policy.max_cooldown_s)


def record_success(health: Health, *, trial: bool) -> Health:
    """A page that was no block: resets failures; the trial's success closes the breaker."""
    if health.state is BreakerState.CLOSED or trial:
        return Health(engine=health.engine, last_reason=health.last_reason)
    return health


def record_failure(
    health: Health,
    policy: BreakerPolicy,
    *,
    kind: str,
    now: float,
    trial: bool,
    retry_after_s: float | None = None,
) -> Health:
    """A block page (kind = its outcome) or a network failure (kind = "network")."""
    failures = health.consecutive_failures + 1
    if health.state is BreakerState.OPEN and not trial:
        return replace(health, consecutive_failures=failures)
    is_block = kind != NETWORK
    if not (is_block or trial or failures >= policy.failure_threshold):
        return replace(health, consecutive_failures=failures, last_reason=kind)
    trips = health.trips + 1
    return Health(
        engine=health.engine,
        state=BreakerState.OPEN,
        open_until=now + cooldown_s(policy, kind, trips, retry_after_s),
        consecutive_failures=failures,
        trips=trips,
        last_reason=kind,
    )


def _utc(instant: float) -> str:
    """A Unix time as people read it: UTC, to the second."""
    return datetime.fromtimestamp(instant, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
