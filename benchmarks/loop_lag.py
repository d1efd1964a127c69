"""A Scrapy extension for benchmarks: how late the reactor runs a timer due every 5 ms.

Enabled with `-s EXTENSIONS=…` adding `benchmarks.loop_lag.LoopLag` and `-s LOOP_LAG_FILE=PATH`.
From engine start to spider close it schedules a tick every 5 ms and records how late each
fires (ms); at close it writes the list as JSON to LOOP_LAG_FILE. Anything that blocks the
reactor thread — a synchronous database call waiting for a lock — shows as lag.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import reactor

TICK_S = 0.005


class LoopLag:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lags_ms: list[float] = []
        self._due = 0.0
        self._call = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        path = crawler.settings.get("LOOP_LAG_FILE")
        if not path:
            raise NotConfigured("LOOP_LAG_FILE is not set")
        extension = cls(Path(path))
        crawler.signals.connect(extension.start, signal=signals.engine_started)
        crawler.signals.connect(extension.stop, signal=signals.spider_closed)
        return extension

    def start(self) -> None:
        self._schedule()

    def _schedule(self) -> None:
        self._due = time.monotonic() + TICK_S
        self._call = reactor.callLater(TICK_S, self._tick)

    def _tick(self) -> None:
        self.lags_ms.append(max(time.monotonic() - self._due, 0.0) * 1000)
        self._schedule()

    def stop(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self.path.write_text(json.dumps(self.lags_ms))
