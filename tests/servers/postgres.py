"""A real PostgreSQL on a free loopback port in a temporary folder, for the whole session; each
test that asks gets a database of its own.

The binaries are the newest /usr/lib/postgresql/*/bin (Debian's `postgresql`), or LYRA_PG_BINDIR.
PostgreSQL refuses to run as root: when the tests do, initdb and the server run as the system
user `postgres`, owning the folder. The server dies with the test process (parent-death signal),
so a killed run leaves no server behind.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lyra_crawl.simulator.process import stop_process
from tests.scrapyd_server import free_port

USER = "lyra"
PASSWORD = "s3cret-pg"
SYSTEM_USER = "postgres"
START_TIMEOUT_S = 30.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class PostgresServer:
    port: int
    socket_dir: Path
    folder: Path

    def url(self, database: str, *, password: str = PASSWORD) -> str:
        """A URL for the role `lyra`, by TCP on loopback, with its password."""
        return f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def admin(self, database: str = "postgres") -> psycopg.Connection[Any]:
        """A superuser connection by the unix socket, in autocommit (CREATE DATABASE)."""
        return psycopg.connect(
            host=str(self.socket_dir),
            port=self.port,
            user=SYSTEM_USER,
            dbname=database,
            autocommit=True,
        )

    def log_tail(self, chars: int = 3000) -> str:
        log = self.folder / "postgres.log"
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""


def bin_dir() -> Path:
    """LYRA_PG_BINDIR, else the newest /usr/lib/postgresql/<version>/bin."""
    if configured := os.environ.get("LYRA_PG_BINDIR"):
        return Path(configured)
    found = [
        path
        for path in Path("/usr/lib/postgresql").glob("*/bin")
        if re.fullmatch(r"\d+", path.parent.name) and (path / "postgres").exists()
    ]
    if not found:
        pytest.fail(
            "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin: install Debian's "
            "postgresql (make test does) or set LYRA_PG_BINDIR"
        )
    return max(found, key=lambda path: int(path.parent.name))


def _die_with_parent() -> None:
    # After the switch of user (which clears it): the server gets SIGINT, a fast shutdown.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _as_server_user() -> dict[str, Any]:
    """Popen arguments that run a command as `postgres` when this process is root."""
    if os.geteuid() != 0:
        return {"preexec_fn": _die_with_parent}
    return {"user": SYSTEM_USER, "group": SYSTEM_USER, "preexec_fn": _die_with_parent}


def _give_to_server_user(folder: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SYSTEM_USER)
        os.chown(folder, entry.pw_uid, entry.pw_gid)


def _wait_until_ready(server: PostgresServer, process: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited at start:\n{server.log_tail()}")
        try:
            server.admin().close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL not ready:\n{server.log_tail()}") from None
            time.sleep(0.1)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL, with the role `lyra` (password PASSWORD) able to create
    databases; stopped at the end of the session."""
    with running_postgres() as server:
        yield server


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server on a free loopback port in a temporary folder, with the role `lyra`
    (password PASSWORD) able to create databases; stopped and removed afterwards."""
    binaries = bin_dir()
    # Not under pytest's tmp folder: that one is root's alone, and the server runs as postgres.
    folder = Path(tempfile.mkdtemp(prefix="lyra-postgres-"))
    _give_to_server_user(folder)
    data = folder / "data"
    server = PostgresServer(port=free_port(), socket_dir=folder, folder=folder)
    try:
        subprocess.run(
            [
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                SYSTEM_USER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            **_as_server_user(),
        )
        with open(folder / "postgres.log", "wb") as log:
            process = subprocess.Popen(
                [
                    str(binaries / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(server.port),
                    "-k",
                    str(folder),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    # A test server: durability traded for speed.
                    "-c",
                    "fsync=off",
                    "-c",
                    "synchronous_commit=off",
                    "-c",
                    "full_page_writes=off",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                **_as_server_user(),
            )
        try:
            _wait_until_ready(server, process)
            with server.admin() as admin:
                admin.execute(f"CREATE ROLE {USER} LOGIN CREATEDB PASSWORD '{PASSWORD}'")
            yield server
        finally:
            # SIGTERM would wait for clients to leave; SIGINT ends their sessions.
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                stop_process(process, timeout=5)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_databases = count(1)


@contextmanager
def new_database(server: PostgresServer, name: str) -> Iterator[str]:
    """The URL of a new, empty database `name` owned by `lyra`, dropped afterwards."""
    with server.admin() as admin:
        admin.execute(f"CREATE DATABASE {name} OWNER {USER}")
    try:
        yield server.url(name)
    finally:
        with server.admin() as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database owned by `lyra`, dropped after the test."""
    with new_database(postgres_server, f"lyra_test_{os.getpid()}_{next(_databases)}") as url:
        yield url
