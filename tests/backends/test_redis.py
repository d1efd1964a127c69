"""What the Redis Coordinator adds to the protocol (tested on both in test_coordination.py), on a
real redis-server: credentials kept out of every message, each step failing closed once Redis is
gone, Redis's clock rather than the node's, and a crawl coordinated through it."""

from __future__ import annotations

import time

import pytest
import pytest_twisted
import redis

from lyra_crawl.backend_urls import BackendUrls, sqlite_url
from lyra_crawl.backends import Backends, open_backends
from lyra_crawl.config import BreakerPolicy
from lyra_crawl.politeness.quota import utc_date
from lyra_crawl.records import BackendError
from tests.conftest import edited_config, in_own_loop, query_db, run_crawl, with_store
from tests.servers.redis import PASSWORD, RedisServer

DAY = "2026-01-01"


def test_a_wrong_password_is_one_clear_error_without_it(tmp_path, redis_server: RedisServer):
    url = f"redis://:not-{PASSWORD}@127.0.0.1:{redis_server.port}/0"
    with pytest.raises(BackendError) as raised:
        in_own_loop(open_backends(BackendUrls(sqlite_url(tmp_path / "db.sqlite3"), url)))

    message = str(raised.value)
    assert PASSWORD not in message
    assert message.startswith(
        f"LYRA_COORDINATION_URL redis://:***@127.0.0.1:{redis_server.port}/0 refused the "
        "credentials (invalid username-password pair"
    )
    assert message.endswith(": fix them")


def test_a_malformed_url_is_one_clear_error_without_the_password(tmp_path):
    url = f"redis://:{PASSWORD}@127.0.0.1:notaport/0"
    with pytest.raises(BackendError) as raised:
        in_own_loop(open_backends(BackendUrls(sqlite_url(tmp_path / "db.sqlite3"), url)))

    message = str(raised.value)
    assert PASSWORD not in message
    assert message.startswith("LYRA_COORDINATION_URL redis://:***@127.0.0.1:notaport/0 is not")


def test_the_deployment_guides_acl_user_shares_slots_and_one_without_its_channels_is_told(
    tmp_path, disposable_redis: RedisServer
):
    """docs/deployment.md's ACL user (`~lyra:* &lyra:*`) can claim, release and hear releases;
    a user whose ACL leaves out the channels gets one error naming the fix at its first claim."""
    admin = redis.Redis(port=disposable_redis.port, password=PASSWORD)
    admin.acl_setuser(
        "lyra",
        enabled=True,
        passwords=["+lyra-pw"],
        keys=["lyra:*"],
        channels=["lyra:*"],
        commands=["+@all", "-@dangerous"],
    )
    admin.acl_setuser(
        "nochannels",
        enabled=True,
        passwords=["+lyra-pw"],
        keys=["lyra:*"],
        commands=["+@all", "-@dangerous"],
    )
    admin.close()

    def url(user: str) -> str:
        return f"redis://{user}:lyra-pw@127.0.0.1:{disposable_redis.port}/0"

    async def share(user: str) -> bool:
        urls = BackendUrls(sqlite_url(tmp_path / "db.sqlite3"), url(user))
        holder, waiter = await open_backends(urls), await open_backends(urls)
        try:
            held = await holder.coordinator.claim_rate_slot("mojeek", lease_s=30)
            refused = await waiter.coordinator.claim_rate_slot("mojeek", lease_s=30)
            assert held.token is not None and refused.held
            await holder.coordinator.release_rate_slot("mojeek", held.token, interval_s=0)
            return await waiter.coordinator.slot_released("mojeek", timeout_s=30)
        finally:
            await holder.close()
            await waiter.close()

    assert in_own_loop(share("lyra")) is True
    with pytest.raises(BackendError) as raised:
        in_own_loop(share("nochannels"))
    message = str(raised.value)
    assert "lyra-pw" not in message
    assert message.startswith(
        f"LYRA_COORDINATION_URL redis://nochannels:***@127.0.0.1:{disposable_redis.port}/0"
        " refused a step (this user has no permissions to access one of the channels"
    )
    assert message.endswith("(ACL: ~lyra:* &lyra:*)")


def test_each_step_fails_closed_with_a_clear_error_once_redis_is_gone(
    tmp_path, disposable_redis: RedisServer
):
    policy = BreakerPolicy(cooldown_s={"captcha": 60.0})
    steps = {
        "reserve_quota": lambda c: c.reserve_quota("mojeek", DAY, 5),
        "quota_used_on": lambda c: c.quota_used_on(DAY),
        "engine_states": lambda c: c.engine_states(["mojeek"], DAY),
        "claim_rate_slot": lambda c: c.claim_rate_slot("mojeek", 30),
        "release_rate_slot": lambda c: c.release_rate_slot("mojeek", 1.0, 1),
        "breaker_admit": lambda c: c.breaker_admit("mojeek", owner="a", trial_lease_s=60),
        "breaker_failure": lambda c: c.breaker_failure(
            "mojeek", policy, kind="captcha", trial=False, retry_after_s=None
        ),
    }

    async def work(backends: Backends) -> dict[str, str]:
        coordinator = backends.coordinator
        assert coordinator.url == f"redis://:***@127.0.0.1:{disposable_redis.port}/0"
        assert await coordinator.reserve_quota("mojeek", DAY, 5)
        disposable_redis.stop()
        errors = {}
        for name, step in steps.items():
            with pytest.raises(BackendError) as raised:
                await step(coordinator)
            errors[name] = str(raised.value)
        return errors

    errors = with_store(tmp_path / "db.sqlite3", work, coordination_url=disposable_redis.url)

    shown = f"LYRA_COORDINATION_URL redis://:***@127.0.0.1:{disposable_redis.port}/0 failed"
    for name, message in errors.items():
        assert message.startswith(shown) and "restart Redis" in message, name
        assert PASSWORD not in message, name


def test_a_node_whose_clock_is_an_hour_ahead_still_agrees_with_the_others(
    tmp_path, redis_url, monkeypatch
):
    honest = time.time
    policy = BreakerPolicy(cooldown_s={"captcha": 60.0})

    async def work(backends: Backends):
        coordinator = backends.coordinator
        monkeypatch.setattr(time, "time", lambda: honest() + 3600)
        first = await coordinator.claim_rate_slot("mojeek", lease_s=30)
        change = await coordinator.breaker_failure(
            "mojeek", policy, kind="captcha", trial=False, retry_after_s=None
        )
        monkeypatch.setattr(time, "time", honest)
        second = await coordinator.claim_rate_slot("mojeek", lease_s=30)
        return first, change, second

    first, change, second = with_store(tmp_path / "db.sqlite3", work, coordination_url=redis_url)

    # Leases and cool-downs run on Redis's clock: the skewed node holds the slot for its 30 s
    # lease, not an hour more, and the breaker opens for 60 s.
    assert first.granted and not second.granted and second.held and 29 < second.wait_s <= 30
    assert change.after.open_until is not None
    assert 59 < change.after.open_until - honest() <= 60


def test_a_day_of_quota_is_kept_two_days_then_expires(tmp_path, redis_server, redis_url):
    with_store(
        tmp_path / "db.sqlite3",
        lambda b: b.coordinator.reserve_quota("mojeek", DAY, None),
        coordination_url=redis_url,
    )

    with redis.Redis(port=redis_server.port, password=PASSWORD) as client:
        assert 2 * 86400 - 5 < client.ttl(f"lyra:quota:{DAY}") <= 2 * 86400


@pytest.mark.e2e
@pytest_twisted.ensureDeferred
async def test_a_crawl_coordinated_through_redis_runs_clean(
    simulator, db_path, tmp_path, redis_url
):
    config = edited_config(tmp_path / "config", lambda doc: doc["engines"]["mojeek"].update(qps=20))
    settings = {
        "LYRA_COORDINATION_URL": redis_url,
        "LYRA_CONFIG_DIR": str(config),
        "LYRA_RATE_LIMIT_ENABLED": True,
    }

    crawler = await run_crawl(
        simulator, db_path, settings, query="salt marsh", engine="mojeek", serp_max_pages=3
    )

    stats = crawler.stats
    assert stats.get_value("lyra/mojeek/quota/reserved") == 3
    assert stats.get_value("lyra/mojeek/pages") == 3
    assert len(simulator.requests("mojeek")) == 3
    used = with_store(
        db_path,
        lambda b: b.coordinator.quota_used("mojeek", utc_date()),
        coordination_url=redis_url,
    )
    assert used == 3, "the quota was reserved in Redis"
    assert query_db(db_path, "SELECT COUNT(*) FROM engine_usage")[0][0] == 0, "not in SQLite"
