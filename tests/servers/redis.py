"""A real Redis for tests and benchmarks: Debian's redis-server on a free loopback port, in a
temporary folder, with nothing persisted and a password (so redaction is tested for real).

`running_redis(folder)` starts one and stops it afterwards. As a pytest plugin
(tests/conftest.py): `redis_server`, one per session, never stopped; `redis_url`, the URL of its
emptied database; and `disposable_redis`, a test's own server for tests that stop Redis mid-test
(stopping the shared one would free its port for any other server to take before it restarts).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from lyra_crawl.simulator.process import stop_process
from tests.scrapyd_server import free_port

REDIS_SERVER = os.environ.get("REDIS_SERVER") or "/usr/bin/redis-server"
PASSWORD = "redis-s3cret-pw"
START_TIMEOUT_S = 10.0


@dataclass
class RedisServer:
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{PASSWORD}@127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start redis-server on this port and wait until it answers."""
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "redis.log"
        self.process = subprocess.Popen(
            [
                REDIS_SERVER,
                *("--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder)),
                *("--save", "", "--appendonly", "no", "--requirepass", PASSWORD),
                *("--logfile", str(log)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                self.flush()
                return
            except redis.RedisError:
                # Also another server answering on the port: redis-server then exits, unbound.
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port}: {log.read_text()}")

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, timeout=10)
            self.process = None

    def flush(self) -> None:
        """Empty every database: each test starts from nothing."""
        with redis.Redis(port=self.port, password=PASSWORD, socket_timeout=5) as client:
            client.flushall()


@contextmanager
def running_redis(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    if not Path(REDIS_SERVER).is_file():
        pytest.skip(f"{REDIS_SERVER} not found: `make servers` installs Debian's redis-server")
    with running_redis(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied."""
    redis_server.flush()
    return redis_server.url


@pytest.fixture
def disposable_redis(redis_server: RedisServer, tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own, which the test may stop."""
    with running_redis(tmp_path / "redis") as server:
        yield server
