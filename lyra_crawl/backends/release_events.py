"""Releases of engines' send slots a process hears of from other processes, by engine.

What both Coordinators' wake-ups share (SQLite: release_signals' datagrams; Redis: a
published channel): a claim forgets earlier releases of its engine (`expect`), a release heard
afterwards wakes whoever waits for the engine (`heard`, `wait`)."""

from __future__ import annotations

import asyncio


class ReleaseEvents:
    def __init__(self) -> None:
        self._events: dict[str, asyncio.Event] = {}

    def expect(self, engine: str) -> None:
        """A claim on `engine`'s slot is about to be made: releases before it are forgotten."""
        self._event(engine).clear()

    def heard(self, engine: str) -> None:
        event = self._events.get(engine)
        if event is not None:
            event.set()

    async def wait(self, engine: str, timeout_s: float) -> bool:
        """Whether `engine`'s slot was released since the last claim on it, waiting for a
        release up to `timeout_s`."""
        try:
            await asyncio.wait_for(self._event(engine).wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def forget(self) -> None:
        """Drop every engine's events (they belong to the event loop they were used on)."""
        self._events.clear()

    def _event(self, engine: str) -> asyncio.Event:
        event = self._events.get(engine)
        if event is None:
            event = self._events[engine] = asyncio.Event()
        return event
