"""Disk full and read-only database: a clear message naming the path, whole pages, exit non-zero.

Both use a real filesystem of their own: a small tmpfs mounted for the test (root only; the
tests skip, saying so, where mounting is not allowed). The disk fills mid-crawl: the simulator
holds page 4 back while a filler file takes every free block. The read-only case remounts the
tmpfs read-only between two crawls.
"""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import query_db, run_scrapy, scrapy_env, start_scrapy
from tests.reliability.test_kill_and_resume import (
    assert_whole_pages,
    wait_for_pages,
    wait_until_held,
)


def mount(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs of its own, unmounted afterwards."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder))
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): needs root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path) -> None:
    """Write zeros into `folder` until its filesystem refuses: the disk is full."""
    with open(folder / "filler", "wb") as filler:
        block = b"\0" * 65536
        try:
            while True:
                filler.write(block)
                filler.flush()
        except OSError:
            pass


@pytest.mark.e2e
def test_a_full_disk_mid_crawl_stops_with_one_clear_error(start_simulator, small_disk):
    db_path = small_disk / "lyra.sqlite3"
    simulator = start_simulator("--hold-at", "mojeek:4")
    process = start_scrapy(
        *("crawl", "serp", "-a", "query=disk full", "-a", "engine=mojeek"),
        *("-a", "serp_max_pages=8", "-a", "strategy=fixed", "-a", "sources=serp"),
        env=scrapy_env(simulator, db_path),
    )
    wait_for_pages(process, db_path, 3)
    wait_until_held(process, simulator, "mojeek", 4)
    fill(small_disk)
    simulator.release("mojeek", 4)
    _, stderr = process.communicate(timeout=120)

    assert process.returncode == 1, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1, stderr[-3000:]
    assert f"cannot write to {db_path}" in errors[0] and "free disk space" in errors[0]
    assert "Traceback" not in stderr
    (small_disk / "filler").unlink()  # room again: the next open marks the crawl interrupted
    assert_whole_pages(db_path)
    pages = [row[0] for row in query_db(db_path, "SELECT page_number FROM serp_pages ORDER BY 1")]
    assert pages[:3] == [1, 2, 3] and pages == list(range(1, len(pages) + 1)) and len(pages) < 8
    result = run_scrapy("report", "--last", "1", env=scrapy_env(simulator, db_path))
    assert result.returncode == 0, result.stderr[-3000:]
    assert query_db(db_path, "SELECT status FROM queries")[0][0] == "interrupted"


@pytest.mark.e2e
def test_a_read_only_database_is_one_clear_error_and_stays_readable(simulator, small_disk):
    db_path = small_disk / "lyra.sqlite3"
    env = scrapy_env(simulator, db_path)
    args = ["crawl", "serp", "-a", "engine=mojeek", "-a", "serp_max_pages=2", "-a", "sources=serp"]
    assert run_scrapy(*args, "-a", "query=read only", env=env).returncode == 0
    remounted = mount("-o", "remount,ro", str(small_disk))
    assert remounted.returncode == 0, remounted.stderr
    requests_before = len(simulator.requests())

    result = run_scrapy(*args, "-a", "query=read only again", env=env)

    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(db_path) in errors[0], result.stderr[-3000:]
    assert "writable" in errors[0] and "LYRA_DB_PATH" in errors[0]
    assert len(simulator.requests()) == requests_before
    # A WAL database on read-only media is read as immutable (SQLite cannot make its -shm).
    reader = sqlite3.connect(f"file:{db_path}?mode=ro&immutable=1", uri=True)
    try:
        assert reader.execute("SELECT COUNT(*) FROM serp_pages").fetchone()[0] == 2
    finally:
        reader.close()
