"""Scrapy's per-response and per-item DEBUG lines are built only when LOG_LEVEL shows them."""

from __future__ import annotations

import logging

import pytest
import pytest_twisted

from tests.conftest import run_crawl

PER_RESPONSE = "Crawled (200)"
PER_ITEM = "Scraped from"


@pytest.mark.parametrize(
    ("level", "shown"), [("DEBUG", True), ("INFO", False), ("debug", True), (logging.INFO, False)]
)
@pytest_twisted.ensureDeferred
async def test_per_response_and_item_lines_only_at_debug(simulator, db_path, caplog, level, shown):
    # caplog listens at the root at every level: it sees a record whenever one is made,
    # whatever Scrapy's own handler would print.
    caplog.set_level(logging.DEBUG)
    await run_crawl(simulator, db_path, {"LOG_LEVEL": level}, query="salt marsh", engine="mojeek")

    messages = [record.getMessage() for record in caplog.records]
    assert any(PER_RESPONSE in message for message in messages) is shown
    assert any(PER_ITEM in message for message in messages) is shown
    assert any("salt marsh" in message for message in messages), "the crawl logged nothing"
