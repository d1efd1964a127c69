"""Wake-ups for a request waiting on a send slot another node holds (Redis coordination).

A claim refused while the slot is held marks it `waiting`, in the claim's script; the release
that frees a waited-for slot publishes the engine's name on one channel, in its script. Each
process subscribes to the channel once, before its first claim, so that no release it waits for
is published before it listens. A lost subscription (Redis gone) ends the listening quietly:
the waits end on their own, and the next claim subscribes again or reports the loss.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress

from redis.asyncio import Redis
from redis.asyncio.client import PubSub
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from lyra_crawl.backends.release_events import ReleaseEvents


class ReleaseListener:
    def __init__(self, client: Redis, channel: str, timeout_s: float) -> None:
        self.channel = channel
        self._client = client
        self._timeout_s = timeout_s
        self._pubsub: PubSub | None = None
        self._listening: asyncio.Task[None] | None = None
        self._heard = ReleaseEvents()

    async def expect(self, engine: str) -> None:
        """A claim on `engine`'s slot is about to be made: releases before it are forgotten.
        Subscribes first if this process has not yet (a RedisError when Redis refuses)."""
        listening = self._listening
        if listening is None or listening.get_loop() is not asyncio.get_running_loop():
            # Events and subscription belong to the event loop they were made on.
            self._heard.forget()
            await self._subscribe()
        elif listening.done():  # the subscription was lost
            await self._subscribe()
        self._heard.expect(engine)

    async def released(self, engine: str, timeout_s: float) -> bool:
        """Whether `engine`'s slot was released since the last claim on it (`expect`), waiting
        for it up to `timeout_s`."""
        return await self._heard.wait(engine, timeout_s)

    async def close(self) -> None:
        if self._listening is not None:
            self._listening.cancel()
            with suppress(asyncio.CancelledError, RuntimeError):
                await self._listening
            self._listening = None
        if self._pubsub is not None:
            with suppress(RedisError, RuntimeError):
                await self._pubsub.aclose()
            self._pubsub = None

    async def _subscribe(self) -> None:
        await self.close()
        pubsub = self._pubsub = self._client.pubsub()
        await pubsub.subscribe(self.channel)
        # Listening only once Redis confirms: a release published before would be missed.
        if await pubsub.get_message(timeout=self._timeout_s) is None:
            raise RedisTimeoutError(f"no confirmation of SUBSCRIBE {self.channel}")
        self._listening = asyncio.ensure_future(self._listen(pubsub))

    async def _listen(self, pubsub: PubSub) -> None:
        with suppress(RedisError, OSError):
            async for message in pubsub.listen():
                if message["type"] == "message":
                    self._heard.heard(message["data"])
