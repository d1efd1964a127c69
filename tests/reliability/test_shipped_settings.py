"""Scrapy's telnet console and remote-control extension stay off wherever the project runs.

Either would open a port that runs Python in the crawler to whoever reaches it.
"""

from __future__ import annotations

import re

import pytest
import pytest_twisted
from scrapy.extensions.remote_control import RemoteControl
from scrapy.extensions.telnet import TelnetConsole
from scrapy.settings import Settings

from tests.conftest import run_crawl
from tests.test_scrapyd import PROJECT, run_jobs, run_settings

CONSOLES = {"TELNETCONSOLE_ENABLED": TelnetConsole, "REMOTE_CONTROL_ENABLED": RemoteControl}


@pytest.mark.parametrize("setting", CONSOLES)
def test_the_project_settings_switch_the_consoles_off(setting):
    settings = Settings()
    settings.setmodule("lyra_crawl.settings", priority="project")

    assert settings.getbool(setting) is False


@pytest.mark.e2e
@pytest_twisted.ensureDeferred
async def test_a_crawl_loads_neither_console(simulator, db_path):
    crawler = await run_crawl(
        simulator, db_path, query="consoles", engine="mojeek", serp_max_pages="1"
    )

    loaded = [type(extension) for extension in crawler.extensions.middlewares]
    assert not set(loaded) & set(CONSOLES.values())


@pytest.mark.e2e
def test_a_scrapyd_job_loads_neither_console(scrapyd, simulator, tmp_path):
    args = {"query": "consoles", "engine": "mojeek", "serp_max_pages": "1"}
    (job_id,) = run_jobs(scrapyd, [(args, run_settings(simulator, tmp_path / "job.sqlite3"))])

    log = scrapyd.job_log(PROJECT, job_id)
    enabled = re.search(r"Enabled extensions:\n\[(.*?)\]", log, re.S)
    assert enabled is not None, log[-3000:]
    assert "TelnetConsole" not in enabled.group(1) and "RemoteControl" not in enabled.group(1)
    assert "Telnet console listening" not in log and "remote control" not in log.lower()
