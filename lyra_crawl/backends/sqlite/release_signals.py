"""Wake-ups for a request waiting on a send slot another process holds (SQLite coordination).

Each process sharing the file has one Unix datagram socket, bound to an address Linux makes up
(an abstract one: no file to clean up). A claim refused because another process holds the slot
records this process's address in `engine_rate_waiters`, in the claim's own transaction; the
release that frees the slot takes the engine's addresses out, in its transaction, and sends
each the engine's name. The refusal and the release being each one transaction, a release
cannot come between a refusal and its record unseen. An address whose process is gone refuses
the datagram, which is dropped; so is one whose queue is full: its waits end on their own.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterable
from contextlib import suppress

from lyra_crawl.backends.release_events import ReleaseEvents


class ReleaseSignals:
    def __init__(self) -> None:
        self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sender.setblocking(False)
        self._receiver: socket.socket | None = None
        self._receiver_address: bytes | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._heard = ReleaseEvents()

    def expect(self, engine: str) -> bytes | None:
        """A claim on `engine`'s slot is about to be made: releases before it are forgotten.
        The address to record if it is refused (None where abstract sockets are unknown)."""
        address = self._address()
        self._heard.expect(engine)
        return address

    async def released(self, engine: str, timeout_s: float) -> bool:
        """Whether `engine`'s slot was released since the last claim on it (`expect`), waiting
        for it up to `timeout_s`."""
        return await self._heard.wait(engine, timeout_s)

    def send(self, engine: str, addresses: Iterable[bytes]) -> None:
        """Tell each waiting process that `engine`'s slot is released (from any thread)."""
        message = engine.encode()
        for address in addresses:
            with suppress(OSError):
                self._sender.sendto(message, address)

    async def close(self) -> None:
        self._stop_receiving()
        self._sender.close()

    def _address(self) -> bytes | None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Bound on the loop that waits: a process may open its backends on one loop (a
            # command's) and crawl on another (the reactor's).
            self._stop_receiving()
            self._heard.forget()
            self._loop, self._receiver = loop, _bound_receiver()
            if self._receiver is not None:
                self._receiver_address = self._receiver.getsockname()
                loop.add_reader(self._receiver.fileno(), self._receive)
        return self._receiver_address

    def _receive(self) -> None:
        assert self._receiver is not None
        while True:
            try:
                message = self._receiver.recv(1024)
            except BlockingIOError:
                return
            self._heard.heard(message.decode(errors="replace"))

    def _stop_receiving(self) -> None:
        if self._receiver is None:
            return
        assert self._loop is not None
        if not self._loop.is_closed():
            self._loop.remove_reader(self._receiver.fileno())
        self._receiver.close()
        self._receiver = self._receiver_address = None


def _bound_receiver() -> socket.socket | None:
    """A non-blocking datagram socket at an abstract address Linux chooses; None elsewhere."""
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        receiver.setblocking(False)
        receiver.bind("")
    except OSError:
        receiver.close()
        return None
    return receiver
