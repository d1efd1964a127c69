"""Pure parts of politeness: last-mile selection, the breaker state machine, config checks."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from lyra_crawl.config import ConfigError, LyraConfig, load_config, parse_config
from lyra_crawl.engines.base import BLOCK_OUTCOMES
from lyra_crawl.politeness.breaker import (
    NETWORK,
    BreakerState,
    Health,
    admit,
    cooldown_s,
    record_failure,
    record_success,
)
from lyra_crawl.politeness.hours import parse_window
from lyra_crawl.politeness.refusals import (
    ANY_ENGINE,
    BREAKER,
    HOURS,
    QUOTA,
    EngineRefusal,
    engine_refusal,
    every_engine_refusal,
)
from lyra_crawl.politeness.selection import choose_engine
from lyra_crawl.query.arguments import usable_engines
from tests.conftest import ROOT


def lastmile_config() -> LyraConfig:
    """The bundled config with mojeek as the first last-mile engine."""
    policy = (ROOT / "config" / "engines.yaml").read_text()
    policy = policy.replace(
        "  mojeek:\n    enabled: true\n    weight: 0.5\n    qps: 0.25\n    daily_limit: null\n"
        "    lastmile: false",
        "  mojeek:\n    enabled: true\n    weight: 0.5\n    qps: 0.25\n    daily_limit: null\n"
        "    lastmile: true",
    ).replace("order: [brave, google, bing]", "order: [mojeek, brave, google, bing]")
    return parse_config((ROOT / "config" / "search_parsers.yaml").read_text(), policy)


@pytest.mark.parametrize(
    ("harvest_rate", "lastmile"),
    [(0.95, True), (0.5, False), (0.9, True), (0.89, False), (0.0, False), (1.0, True)],
)
def test_last_mile_at_or_above_the_threshold(harvest_rate, lastmile):
    config = lastmile_config()
    usable = usable_engines(config)

    decision = choose_engine(
        config, usable=usable, available=usable, harvest_rate=harvest_rate, rng=random.Random(1)
    )

    assert decision.should_use_lastmile is lastmile
    assert (decision.engine == "mojeek") is lastmile
    assert decision.engine in usable
    assert (decision.harvest_rate, decision.threshold) == (harvest_rate, 0.9)
    assert decision.as_dict()["reason"] == decision.reason


def test_last_mile_falls_back_to_normal_engines_when_none_is_available():
    config = lastmile_config()
    usable = usable_engines(config)

    decision = choose_engine(
        config,
        usable=usable,
        available=[name for name in usable if not config.policy(name).lastmile],
        harvest_rate=0.97,
    )

    assert decision.engine in usable and not config.policy(decision.engine).lastmile
    assert decision.should_use_lastmile is True
    assert "no last-mile engine is available (unavailable: mojeek, brave, google, bing)" in (
        decision.reason
    )


def test_no_harvest_rate_means_a_weighted_choice_among_available_engines():
    config = load_config()
    usable = usable_engines(config)

    decision = choose_engine(config, usable=usable, available=["mojeek"], harvest_rate=None)

    assert (decision.engine, decision.should_use_lastmile) == ("mojeek", False)
    assert choose_engine(config, usable=usable, available=[], harvest_rate=0.2).engine is None


def test_bundled_last_mile_engines_fetch_one_page_and_come_in_the_documented_order():
    config = load_config()
    assert config.lastmile.order == ("brave", "google", "bing")
    assert config.lastmile.threshold == 0.9
    assert all(not config.policy(name).pagination_enabled for name in config.lastmile.order)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("order: [brave, google, bing]", "order: [brave, google]", "missing from lastmile.order"),
        ("order: [brave, google, bing]", "order: [mojeek]", "names 'mojeek', which is not"),
        ("threshold: 0.9", "threshold: 1.5", "lastmile.threshold must be between 0 and 1"),
        ("    captcha: 3600", "    captcha: 0", "breaker.cooldown_s.captcha must be > 0"),
        ("    captcha: 3600", "    captchas: 3600", "breaker.cooldown_s.captchas must be one of"),
        ("failure_threshold: 3", "failure_threshold: 0", "failure_threshold must be >= 1"),
    ],
)
def test_politeness_config_errors_name_the_field(old, new, message):
    policy = (ROOT / "config" / "engines.yaml").read_text()
    assert old in policy
    with pytest.raises(ConfigError, match=message):
        parse_config(
            (ROOT / "config" / "search_parsers.yaml").read_text(), policy.replace(old, new, 1)
        )


POLICY = load_config().breaker


def test_an_engine_refuses_by_its_breaker_then_its_quota_then_its_hours():
    policy = replace(
        load_config().policy("mojeek"),
        daily_limit=5,
        allowed_hours=(parse_window("01:00-06:00"),),
    )
    night = datetime(2026, 11, 27, 2, 0, tzinfo=UTC)
    day = night.replace(hour=12)
    opened = Health(
        "mojeek", BreakerState.OPEN, night.timestamp() + 60, trips=1, last_reason="captcha"
    )

    def refusal(health: Health, used: int, now: datetime):
        found = engine_refusal("mojeek", policy, health, used, now)
        return None if found is None else (found.kind, found.reason, found.ends_soon)

    assert refusal(opened, 5, day.replace(hour=2)) == (
        BREAKER,
        "its breaker is open until 2026-11-27 02:01:00 UTC (captcha)",
        True,
    )
    assert refusal(opened, 5, night.replace(minute=2)) == (
        QUOTA,
        "its daily quota of 5 requests is spent until midnight UTC",
        False,
    )
    assert refusal(Health("mojeek"), 4, day) == (
        HOURS,
        "it takes requests only in 01:00-06:00 UTC",
        False,
    )
    assert refusal(Health("mojeek"), 4, night) is None
    # A rule the crawl does not enforce is not asked: the next one decides.
    quota_only = engine_refusal("mojeek", policy, opened, 5, night, enforced={QUOTA, HOURS})
    assert quota_only is not None and quota_only.kind == QUOTA
    assert engine_refusal("mojeek", policy, opened, 5, day, enforced={BREAKER}) is None, (
        "outside the hours with its quota spent, but only the breaker (closed by then) asked"
    )
    assert engine_refusal("mojeek", policy, opened, 5, night, enforced=()) is None


def test_entries_without_engine_wait_only_when_every_engine_they_may_go_to_refuses():
    quota = EngineRefusal("mojeek", QUOTA, "its daily quota of 5 requests is spent")
    breaker = EngineRefusal("bing", BREAKER, "its breaker is open until 02:01 UTC (captcha)")

    assert every_engine_refusal(["bing", "mojeek"], {"mojeek": quota}) is None
    assert every_engine_refusal([], {"mojeek": quota}) is None, "no engine: nothing to wait for"
    only_quota = every_engine_refusal(["mojeek"], {"mojeek": quota, "bing": breaker})
    assert only_quota == EngineRefusal(
        ANY_ENGINE,
        QUOTA,
        "every engine the frontier may give them refuses requests now (mojeek: its daily "
        "quota of 5 requests is spent)",
    )
    both = every_engine_refusal(["bing", "mojeek"], {"mojeek": quota, "bing": breaker})
    assert both is not None and both.ends_soon, "a breaker's cool-down ends: waited for"
    assert both.reason.endswith(
        "(bing: its breaker is open until 02:01 UTC (captcha); mojeek:"
        " its daily quota of 5 requests is spent)"
    )


def test_breaker_opens_on_a_block_and_admits_one_trial_after_the_cooldown():
    opened = record_failure(Health("bing"), POLICY, kind="captcha", now=100.0, trial=False)
    assert (opened.state, opened.open_until, opened.trips) == (BreakerState.OPEN, 3700.0, 1)

    refused, _ = admit(opened, now=3699.0, owner="a", trial_lease_s=30)
    assert not refused.allowed and not refused.unreachable
    assert refused.reason == "breaker is open until 1970-01-01 01:01:40 UTC (captcha)"
    trial, half_open = admit(opened, now=3700.0, owner="a", trial_lease_s=30)
    assert trial.allowed and trial.trial and half_open.state is BreakerState.HALF_OPEN
    second, _ = admit(half_open, now=3701.0, owner="b", trial_lease_s=30)
    assert not second.allowed, "one trial at a time"
    after_lease, _ = admit(half_open, now=3731.0, owner="b", trial_lease_s=30)
    assert after_lease.trial, "a trial whose process died is taken over after its lease"

    closed = record_success(half_open, trial=True)
    assert (closed.state, closed.trips, closed.consecutive_failures) == (BreakerState.CLOSED, 0, 0)


def test_a_breaker_opened_on_network_failures_refuses_the_engine_as_unreachable():
    health = Health("mojeek")
    for _ in range(POLICY.failure_threshold):
        health = record_failure(health, POLICY, kind=NETWORK, now=0.0, trial=False)

    refused, _ = admit(health, now=1.0, owner="a", trial_lease_s=30)

    assert not refused.allowed and refused.unreachable
    assert refused.reason.endswith("UTC (network)")


def test_a_failed_trial_doubles_the_cooldown_up_to_the_cap():
    health = Health("bing")
    cooldowns = []
    for _ in range(12):
        health = record_failure(health, POLICY, kind="rate_limited", now=0.0, trial=True)
        cooldowns.append(health.open_until)
    assert cooldowns[:3] == [600.0, 1200.0, 2400.0]
    assert cooldowns[-1] == POLICY.max_cooldown_s
    assert cooldown_s(POLICY, "rate_limited", 1, retry_after_s=42.0) == 42.0


def test_network_failures_open_the_breaker_only_after_the_threshold_in_a_row():
    health = Health("mojeek")
    for _ in range(POLICY.failure_threshold - 1):
        health = record_failure(health, POLICY, kind="network", now=0.0, trial=False)
        assert health.state is BreakerState.CLOSED
    assert record_success(health, trial=False).consecutive_failures == 0
    health = record_failure(health, POLICY, kind="network", now=0.0, trial=False)
    assert (health.state, health.open_until) == (BreakerState.OPEN, 5.0)


def test_every_block_outcome_has_a_cool_down():
    cooldowns = load_config().breaker.cooldown_s
    assert {outcome.value for outcome in BLOCK_OUTCOMES} <= set(cooldowns)
