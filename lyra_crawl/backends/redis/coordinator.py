"""RedisCoordinator: quotas, send slots and breakers shared by every node through one Redis.

Each step is one atomic Lua script (lyra_crawl.backends.redis.scripts) on redis-py's asyncio
client, timed by Redis's own clock. The breaker's state machine stays the one in
lyra_crawl.politeness.breaker: a step reads the state with the server's time, decides in Python,
and writes with a version-checked compare-and-set, deciding again from a fresh read when another
node changed the breaker in between.

Keys, under `lyra:`: `quota:<day>` (a hash of requests per engine, kept two days after its last
reservation), `rate:<engine>` (the send slot), `breaker:<engine>` (the breaker's fields and a
version); the channel `rate:released` carries the releases someone waits for (releases). One
Redis, not a Redis Cluster: engine_states reads every engine's keys at once.

Every Redis error becomes a BackendError naming the URL without its password, and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import AuthenticationError, NoPermissionError, RedisError

from lyra_crawl.backends.breaker_steps import BreakerSteps
from lyra_crawl.backends.redis import scripts
from lyra_crawl.backends.redis.releases import ReleaseListener
from lyra_crawl.politeness.breaker import BreakerState, Health
from lyra_crawl.quoting import redact_url, without_password
from lyra_crawl.records import BackendError, EngineState, RateClaim

T = TypeVar("T")

SETTING = "LYRA_COORDINATION_URL"
KEY_PREFIX = "lyra:"
# A day's counts outlive the day, so the day after can still be reported on.
QUOTA_TTL_S = 2 * 86400
# A Redis that does not answer within this fails the step (fail closed) rather than hang it.
TIMEOUT_S = 5.0
# A dropped connection is tried again twice, briefly: a retried reservation may count twice,
# which errs on the side of fewer requests, never more.
RETRY = Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries=2)


class RedisCoordinator(BreakerSteps):
    def __init__(self, client: Redis, url: str) -> None:
        self._client = client
        self._raw_url = url
        self._url = redact_url(url)
        self._reserve = client.register_script(scripts.RESERVE_QUOTA)
        self._claim = client.register_script(scripts.CLAIM_RATE_SLOT)
        self._release = client.register_script(scripts.RELEASE_RATE_SLOT)
        self._read_breaker = client.register_script(scripts.READ_BREAKER)
        self._write_breaker = client.register_script(scripts.WRITE_BREAKER)
        self._engine_states = client.register_script(scripts.ENGINE_STATES)
        self._releases = ReleaseListener(client, _key("rate", "released"), TIMEOUT_S)

    @classmethod
    async def open(cls, url: str) -> RedisCoordinator:
        """Connect to the Redis `url` names and check that it answers (PING)."""
        try:
            client = Redis.from_url(
                url,
                decode_responses=True,
                socket_timeout=TIMEOUT_S,
                socket_connect_timeout=TIMEOUT_S,
                retry=RETRY,
            )
        except ValueError as exc:
            raise _error(
                url, f"is not a Redis URL ({exc})", "use redis://[:password@]host:port/db"
            ) from None
        try:
            await client.ping()
        except AuthenticationError as exc:
            await client.aclose()
            raise _error(url, f"refused the credentials ({_reason(exc)})", "fix them") from exc
        except RedisError as exc:
            await client.aclose()
            raise _error(
                url, f"is unreachable ({_reason(exc)})", "start Redis there or fix the URL"
            ) from exc
        return cls(client, url)

    @property
    def url(self) -> str:
        return self._url

    async def close(self) -> None:
        await self._releases.close()
        await self._client.aclose()

    # -- daily quota -----------------------------------------------------------------------

    async def reserve_quota(self, engine: str, day: str, daily_limit: int | None) -> bool:
        limit = -1 if daily_limit is None else daily_limit
        taken = await self._run(
            self._reserve(keys=[_key("quota", day)], args=[engine, limit, QUOTA_TTL_S])
        )
        return taken == 1

    async def quota_used(self, engine: str, day: str) -> int:
        return int(await self._run(self._client.hget(_key("quota", day), engine)) or 0)

    async def quota_used_on(self, day: str) -> dict[str, int]:
        used = await self._run(self._client.hgetall(_key("quota", day)))
        return {engine: int(count) for engine, count in used.items()}

    async def engine_states(self, engines: Sequence[str], day: str) -> dict[str, EngineState]:
        keys = [_key("quota", day), *(_key("breaker", engine) for engine in engines)]
        states = await self._run(self._engine_states(keys=keys, args=list(engines)))
        return {
            engine: EngineState(_health(engine, _pairs(fields)), int(used))
            for engine, (used, fields) in zip(engines, states, strict=True)
        }

    # -- the per-engine send slot ----------------------------------------------------------

    async def claim_rate_slot(self, engine: str, lease_s: float) -> RateClaim:
        await self._run(self._releases.expect(engine))
        claim = await self._run(self._claim(keys=[_key("rate", engine)], args=[lease_s]))
        if claim[0] == 1:
            return RateClaim(token=float(claim[1]))
        return RateClaim(None, max(float(claim[1]), 0.0), claim[2] == "1")

    async def slot_released(self, engine: str, timeout_s: float) -> bool:
        return await self._releases.released(engine, timeout_s)

    async def release_rate_slot(self, engine: str, token: float, interval_s: float) -> None:
        await self._run(
            self._release(
                keys=[_key("rate", engine)],
                args=[repr(token), interval_s, self._releases.channel, engine],
            )
        )

    # -- circuit breaker -------------------------------------------------------------------

    async def breaker_health(self, engine: str) -> Health:
        return _health(engine, await self._run(self._client.hgetall(_key("breaker", engine))))

    async def _change_health(
        self, engine: str, change: Callable[[Health, float], tuple[T, Health]]
    ) -> T:
        """Apply `change` to `engine`'s breaker atomically; returns its first value.

        Most answers change nothing (a closed breaker stays closed): the read settles those.
        A change is written only if nobody else wrote the breaker since it was read; else it
        is decided again from what they wrote.
        """
        key = _key("breaker", engine)
        while True:
            now, fields = await self._run(self._read_breaker(keys=[key]))
            saved = _pairs(fields)
            before = _health(engine, saved)
            result, after = change(before, float(now))
            if after == before:
                return result
            written = await self._run(
                self._write_breaker(keys=[key], args=[saved.get("version", "0"), *_fields(after)])
            )
            if written == 1:
                return result

    # -- errors ----------------------------------------------------------------------------

    async def _run(self, call: Awaitable[Any]) -> Any:
        """The answer of one Redis call; a Redis failure is a BackendError (fail closed)."""
        try:
            return await call
        except NoPermissionError as exc:
            raise _error(
                self._raw_url,
                f"refused a step ({_reason(exc)})",
                "let lyra's user use the keys and channels under lyra: (ACL: ~lyra:* &lyra:*)",
            ) from exc
        except RedisError as exc:
            raise _error(
                self._raw_url,
                f"failed ({_reason(exc)})",
                "no request goes out until it answers; restart Redis or fix the URL, then "
                "crawl again with -a resume=true",
            ) from exc


def _error(url: str, what: str, fix: str) -> BackendError:
    """The Redis at `url` `what`, and the fix; the password never shows, even in a cause."""
    return BackendError(without_password(f"{SETTING} {redact_url(url)} {what}: {fix}", url))


def _key(kind: str, name: str) -> str:
    return f"{KEY_PREFIX}{kind}:{name}"


def _pairs(flat: Sequence[str]) -> dict[str, str]:
    """A hash as a Lua script returns it (field, value, …) as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _fields(health: Health) -> list[str]:
    """`health` as the breaker hash's field, value, …; an empty value is None."""
    values = {
        "state": health.state.value,
        "open_until": health.open_until,
        "consecutive_failures": health.consecutive_failures,
        "trips": health.trips,
        "last_reason": health.last_reason,
        "trial_owner": health.trial_owner,
    }
    return [part for name, value in values.items() for part in (name, _text(value))]


def _text(value: object) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def _health(engine: str, saved: Mapping[str, str]) -> Health:
    if "state" not in saved:
        return Health(engine=engine)
    return Health(
        engine=engine,
        state=BreakerState(saved["state"]),
        open_until=float(saved["open_until"]) if saved["open_until"] else None,
        consecutive_failures=int(saved["consecutive_failures"]),
        trips=int(saved["trips"]),
        last_reason=saved["last_reason"] or None,
        trial_owner=saved["trial_owner"] or None,
    )


def _reason(exc: RedisError) -> str:
    """The cause in a few words: the system's name for a socket error, else redis-py's."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, OSError) and cause.errno:
        return os.strerror(cause.errno)
    return str(exc).rstrip(".") or type(exc).__name__
