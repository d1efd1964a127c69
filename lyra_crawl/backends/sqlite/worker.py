"""WorkerThread: one thread that runs the functions handed to it, in order, each answer going back
to the event loop that asked.

What `loop.run_in_executor(ThreadPoolExecutor(max_workers=1), …)` does, for half its cost: a
plain queue in, `call_soon_threadsafe` out, no concurrent.futures.Future between. The crawl asks
the coordinator several times per request, so each hop's cost is paid on the reactor thread that
often (measured: about 60 µs a round trip and 46 µs of the loop's CPU through the executor, about
32 µs and 25 µs here).
"""

from __future__ import annotations

import asyncio
import atexit
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[[], Any]]


class WorkerThread:
    """Started on the first call; `stop` lets the calls already handed in finish first.

    A daemon thread, stopped at interpreter exit (atexit) if nobody stopped it: work in flight
    then still completes, as with a ThreadPoolExecutor.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        return self._stopped

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` on the worker thread; its result or exception, here."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[T] = loop.create_future()
        with self._lock:
            if self._stopped:
                raise RuntimeError(f"worker thread {self.name} is stopped")
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
                atexit.register(self.stop)
            self._jobs.put((loop, answer, work))
        return await answer

    def stop(self) -> None:
        """Refuse new work, let the queued work finish, and end the thread."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            thread = self._thread
        if thread is None:
            return
        atexit.unregister(self.stop)
        self._jobs.put(None)
        if thread is not threading.current_thread():
            thread.join()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, answer, work = job
            try:
                result, error = work(), None
            except BaseException as exc:
                result, error = None, exc
            with suppress(RuntimeError):  # the asking loop is closed: nobody is left to tell
                loop.call_soon_threadsafe(_settle, answer, result, error)


def _settle(answer: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if answer.cancelled():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)
