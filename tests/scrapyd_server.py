"""A real Scrapyd on loopback in a temporary folder, with the project deployed by scrapyd-deploy."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests

from lyra_crawl.simulator.process import stop_process

# What setup.py packs into the egg; copied so the build leaves no build/ or egg-info in the repo.
EGG_SOURCES = ("setup.py", "scrapy.cfg", "lyra_crawl", "config")
START_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ScrapydServer:
    url: str
    folder: Path

    def log_tail(self, chars: int = 3000) -> str:
        log = self.folder / "scrapyd.log"
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def job_log(self, project: str, job_id: str) -> str:
        log = self.folder / "logs" / project / "serp" / f"{job_id}.log"
        return log.read_text(errors="replace") if log.exists() else f"(no log at {log})"


def free_port() -> int:
    # Scrapyd serves nothing when http_port is 0, so a free port is picked up front.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_config(folder: Path, port: int) -> None:
    (folder / "scrapyd.conf").write_text(
        "[scrapyd]\n"
        "bind_address = 127.0.0.1\n"
        f"http_port = {port}\n"
        f"eggs_dir = {folder / 'eggs'}\n"
        f"logs_dir = {folder / 'logs'}\n"
        f"dbs_dir = {folder / 'dbs'}\n"
        "jobstorage = scrapyd.jobstorage.SqliteJobStorage\n"
        "poll_interval = 0.5\n"
        "max_proc = 4\n"
    )


def clean_environment() -> dict[str, str]:
    """This environment without LYRA_* variables: jobs get their settings from schedule.json."""
    return {name: value for name, value in os.environ.items() if not name.startswith("LYRA_")}


def wait_until_up(url: str, process: subprocess.Popen[bytes], folder: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if requests.get(f"{url}/daemonstatus.json", timeout=2).json()["status"] == "ok":
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    log = folder / "scrapyd.log"
    raise RuntimeError(
        f"scrapyd did not answer at {url}: {log.read_text() if log.exists() else 'no log'}"
    )


@contextmanager
def running_scrapyd(
    folder: Path, environment: dict[str, str] | None = None
) -> Iterator[ScrapydServer]:
    """Start `scrapyd` in `folder` (its own scrapyd.conf there), with `environment` over a clean
    one (a node's own settings, as a systemd unit gives them); stop it afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    write_config(folder, port)
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "scrapyd", "--logfile", "scrapyd.log", "--pidfile", ""],
        cwd=folder,
        env={**clean_environment(), **(environment or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until_up(url, process, folder)
        yield ScrapydServer(url=url, folder=folder)
    finally:
        stop_process(process, timeout=20)


def build_egg(project_root: Path, workdir: Path) -> Path:
    """The project's egg, built by `scrapyd-deploy --build-egg` from a copy of it in `workdir`
    (so the build leaves nothing in the repo): built once, deployed to every node."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in EGG_SOURCES:
        source = project_root / name
        if source.is_dir():
            shutil.copytree(source, workdir / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, workdir / name)
    egg = workdir / "lyra_crawl.egg"
    _scrapyd_deploy(workdir, "--build-egg", str(egg))
    return egg


def deploy(server: ScrapydServer, project_root: Path, workdir: Path, egg: Path) -> str:
    """`scrapyd-deploy` the project's `egg` to `server`, from `workdir`; returns its answer."""
    workdir.mkdir(parents=True, exist_ok=True)
    # A target of its own; the project name still comes from the committed [deploy] section.
    config = (project_root / "scrapy.cfg").read_text()
    (workdir / "scrapy.cfg").write_text(f"{config}\n[deploy:test]\nurl = {server.url}\n")
    return _scrapyd_deploy(workdir, "test", "--version", "r1", "--egg", str(egg))


def _scrapyd_deploy(workdir: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "scrapyd_client.deploy", *args],
        cwd=workdir,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0:
        raise RuntimeError(f"scrapyd-deploy failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout
