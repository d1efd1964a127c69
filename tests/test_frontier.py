"""The batch frontier's pure rules: the earliest free engine, allowed hours, the last-mile share,
and the concurrency a batch runs at by default."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime

import pytest
import yaml

from lyra_crawl.config import ConfigError, parse_config
from lyra_crawl.politeness.hours import allowed_at, parse_window
from lyra_crawl.politeness.selection import TaskShare, choose_engine
from lyra_crawl.query.arguments import default_concurrency, usable_engines
from tests.conftest import ROOT

NIGHT = datetime(2026, 11, 22, 3, 30, tzinfo=UTC)
NOON = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def config_with(edit) -> object:
    policy = yaml.safe_load((ROOT / "config" / "engines.yaml").read_text())
    edit(policy)
    parsers = (ROOT / "config" / "search_parsers.yaml").read_text()
    return parse_config(parsers, yaml.safe_dump(policy))


def same_qps(policy) -> None:
    for engine in policy["engines"].values():
        engine["qps"] = 20.0


def test_with_nothing_queued_the_choice_follows_the_weights():
    config = config_with(same_qps)
    usable = usable_engines(config)
    rng = random.Random(7)

    picks = Counter(
        choose_engine(config, usable=usable, available=usable, harvest_rate=None, rng=rng).engine
        for _ in range(4000)
    )

    weights = {n: config.policy(n).weight for n in usable if config.policy(n).weight > 0}
    assert set(picks) == set(weights)
    for name, weight in weights.items():
        assert picks[name] / 4000 == pytest.approx(weight / sum(weights.values()), abs=0.03)


def test_a_backlog_sends_the_next_query_to_the_engine_free_soonest():
    config = config_with(same_qps)
    usable = usable_engines(config)
    queued = {name: 30.0 for name in usable}
    queued["marginalia"] = 2.0  # the lightest weight, but nearly idle

    decision = choose_engine(
        config, usable=usable, available=usable, harvest_rate=0.3, queued=queued
    )

    assert decision.engine == "marginalia"
    assert "earliest free (marginalia" in decision.reason


def test_under_a_backlog_every_engine_gets_work_in_proportion_to_its_capacity():
    def edit(policy) -> None:
        same_qps(policy)
        policy["engines"]["mojeek"]["qps"] = 40.0

    config = config_with(edit)
    usable = usable_engines(config)
    weighted = [n for n in usable if config.policy(n).weight > 0]
    queued: Counter[str] = Counter()
    rng = random.Random(3)
    for _ in range(700):
        engine = choose_engine(
            config, usable=usable, available=usable, harvest_rate=None, queued=queued, rng=rng
        ).engine
        queued[engine] += 3  # three pages each, never drained: a growing backlog

    assert set(queued) == set(weighted)
    per_qps = {name: queued[name] / config.policy(name).qps for name in weighted}
    assert max(per_qps.values()) - min(per_qps.values()) <= 3 / 20 + 1e-9


def test_an_engine_outside_its_allowed_hours_is_not_chosen_and_the_reason_says_so():
    def edit(policy) -> None:
        for name, engine in policy["engines"].items():
            engine["weight"] = 1.0 if name in ("mojeek", "duckduckgo") else 0.0
        policy["engines"]["mojeek"]["allowed_hours"] = ["01:00-06:00"]

    config = config_with(edit)
    usable = usable_engines(config)

    night = choose_engine(config, usable=usable, available=usable, harvest_rate=None, now=NIGHT)
    noon = [
        choose_engine(config, usable=usable, available=usable, harvest_rate=None, now=NOON)
        for _ in range(20)
    ]

    assert night.engine in ("mojeek", "duckduckgo")
    assert {decision.engine for decision in noon} == {"duckduckgo"}
    assert "outside allowed hours: mojeek" in noon[0].reason


def test_last_mile_engines_keep_their_hours_too():
    def edit(policy) -> None:
        policy["engines"]["brave"]["allowed_hours"] = ["22:00-02:00"]

    config = config_with(edit)
    usable = usable_engines(config)

    late = choose_engine(config, usable=usable, available=usable, harvest_rate=1.0, now=NIGHT)

    assert late.engine == "google"  # next in lastmile.order
    at_midnight = datetime(2026, 11, 22, 23, 59, tzinfo=UTC)
    assert (
        choose_engine(
            config, usable=usable, available=usable, harvest_rate=1.0, now=at_midnight
        ).engine
        == "brave"
    )


@pytest.mark.parametrize(
    ("share", "lastmile"),
    [
        (None, True),
        (TaskShare(0, 0), True),
        (TaskShare(0, 9), True),
        (TaskShare(1, 10), False),
        (TaskShare(1, 11), True),
        (TaskShare(5, 50), False),
    ],
)
def test_the_last_mile_share_of_a_task_is_capped(share, lastmile):
    config = config_with(lambda policy: None)
    usable = usable_engines(config)

    decision = choose_engine(
        config, usable=usable, available=usable, harvest_rate=1.0, task_share=share, now=NOON
    )

    assert (decision.engine == "brave") is lastmile
    if not lastmile:
        assert "lastmile.max_share 0.1" in decision.reason


def test_hour_windows():
    window = parse_window("22:00-02:00")
    assert allowed_at([window], datetime(2026, 1, 1, 23, 0, tzinfo=UTC))
    assert allowed_at([window], datetime(2026, 1, 1, 1, 59, tzinfo=UTC))
    assert not allowed_at([window], datetime(2026, 1, 1, 2, 0, tzinfo=UTC))
    assert allowed_at([parse_window("00:00-24:00")], datetime(2026, 1, 1, 23, 59, tzinfo=UTC))
    assert allowed_at([], NOON)
    for bad in ("1:00-6:00", "01:00-01:00", "25:00-02:00", "01:00-24:30", "noon"):
        with pytest.raises(ValueError, match=r"01:00-06:00|24:00|start before"):
            parse_window(bad)


def test_a_bad_window_in_engines_yaml_is_one_clear_error():
    def edit(policy) -> None:
        policy["engines"]["mojeek"]["allowed_hours"] = ["01:00-06:00", "late"]

    with pytest.raises(ConfigError) as raised:
        config_with(edit)
    assert str(raised.value) == (
        "engines.yaml: engine 'mojeek': allowed_hours[1]: expected a UTC window such as "
        "'01:00-06:00' (got 'late')"
    )


def test_a_batch_runs_two_queries_per_weighted_engine_by_default():
    config = config_with(lambda policy: None)
    weighted = [n for n in usable_engines(config) if config.policy(n).weight > 0]

    assert default_concurrency(config) == 2 * len(weighted)
