"""The `store` fixture of the store contract tests: each test runs once on a real SQLite file
and once on a real PostgreSQL database of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends.test_store import StoreUnderTest, postgres_store, sqlite_store


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    if request.param == "sqlite":
        return sqlite_store(tmp_path)
    return postgres_store(request.getfixturevalue("postgres_url"), tmp_path)
