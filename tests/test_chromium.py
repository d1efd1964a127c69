"""Which Chromium a crawl launches: LYRA_CHROMIUM_PATH, else Playwright's own, else Debian's."""

from __future__ import annotations

from pathlib import Path

import pytest

from lyra_crawl.browser.chromium import ChromiumNotFound, chromium_executable


def program(path: Path, mode: int = 0o755) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return str(path)


def test_lyra_chromium_path_wins_over_playwrights_own(tmp_path: Path) -> None:
    configured = program(tmp_path / "chromium")
    own = program(tmp_path / "chrome")
    assert chromium_executable(configured, own) == configured


def test_playwrights_own_chromium_comes_before_debians(tmp_path: Path) -> None:
    own = program(tmp_path / "chrome")
    assert chromium_executable(None, own) == own


@pytest.mark.parametrize("mode", [None, 0o644])
def test_a_missing_or_unrunnable_chromium_names_the_setting_and_the_fixes(
    tmp_path: Path, mode: int | None
) -> None:
    configured = tmp_path / "chromium"
    if mode is not None:
        program(configured, mode)
    with pytest.raises(ChromiumNotFound) as error:
        chromium_executable(str(configured), str(tmp_path / "no-chrome"))
    message = str(error.value)
    assert f"Chromium not found at {configured} (LYRA_CHROMIUM_PATH)" in message
    assert "apt-get install -y chromium" in message
    assert "playwright install chromium" in message
