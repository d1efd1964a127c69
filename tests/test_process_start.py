"""What a process loads when it starts, seen in `sys.modules` of real processes.

Scrapy imports every command module of every `scrapy` process to list the commands, a crawl
included; so each command module loads what every command needs, and the rest is imported by
the command, the crawl or the page that needs it: the spiders and the crawl session by the
commands that crawl, rich by a live table on a terminal, the paper writers by export-papers, the
Scrapyd client by `scrapy batch --scrapyd`, ftfy by the first text that is not ASCII, a driver
by the backend that uses it. A crawl on SQLite loads no PostgreSQL or Redis driver, no browser.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, query_db, scrapy_env

# Prints the top-level packages and lyra_crawl modules loaded by the time the process exits.
LOADED_AT_EXIT = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))\n"
)
DRIVERS_AND_BROWSER = {"psycopg", "psycopg_pool", "redis", "playwright"}
# What only some commands use.
COMMAND_LIBRARIES = {"rich", "bibtexparser", "rispy", "scrapyd_client", "requests", "ftfy"}
CRAWL_MODULES = {"lyra_crawl.spiders.serp", "lyra_crawl.spiders.papers", "lyra_crawl.session.crawl"}


def loaded(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a Python process running `args` (after `-c`) had loaded when it exited."""
    result = subprocess.run(
        [sys.executable, "-c", LOADED_AT_EXIT + args[0], *args[1:]],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def packages(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.mark.subprocess
def test_every_command_module_loads_neither_the_crawl_nor_what_one_command_uses():
    modules = loaded(
        "import importlib, pkgutil, lyra_crawl.commands as commands\n"
        "for module in pkgutil.iter_modules(commands.__path__):\n"
        "    importlib.import_module(f'lyra_crawl.commands.{module.name}')\n"
    )

    assert "lyra_crawl.commands.crawl" in modules and "lyra_crawl.backends" in modules
    assert not modules & CRAWL_MODULES
    assert not packages(modules) & (COMMAND_LIBRARIES | DRIVERS_AND_BROWSER)


@pytest.mark.subprocess
def test_the_simulator_loads_no_config_without_a_changed_layout():
    modules = loaded("import lyra_crawl.simulator.__main__")

    assert "lyra_crawl.simulator.server" in modules
    assert "lyra_crawl.config" not in modules and "pydantic" not in packages(modules)


@pytest.mark.e2e
@pytest.mark.subprocess
def test_a_crawl_on_sqlite_loads_no_other_backend_driver_no_browser_no_command_library(
    simulator, db_path: Path
):
    modules = loaded(
        "import runpy, sys\n"
        "sys.argv = ['scrapy', *sys.argv[1:]]\n"
        "runpy.run_module('scrapy', run_name='__main__', alter_sys=True)\n",
        *("crawl", "serp", "-a", "query=peat fires", "-a", "engine=mojeek"),
        *("-a", "serp_max_pages=1"),
        env={**os.environ, **scrapy_env(simulator, db_path)},
    )

    stored = query_db(db_path, "SELECT COUNT(*) AS n FROM serp_items")[0]["n"]
    assert stored > 0 and "lyra_crawl.session.crawl" in modules
    # Scrapy's cookies middleware loads requests (through tldextract); ftfy comes with the
    # first text that is not ASCII, whatever the crawl finds.
    unused = COMMAND_LIBRARIES - {"requests", "ftfy"}
    assert not packages(modules) & (DRIVERS_AND_BROWSER | unused)
    assert "sqlalchemy.dialects.sqlite" in modules
