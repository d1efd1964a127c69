"""`scrapy crawl papers`: abstracts read from the simulator's landing pages over real HTTP, the
pages without one recorded with their outcome, and bad arguments refused before any request."""

from __future__ import annotations

import pytest

from tests.conftest import run_scrapy, scrapy_env


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {}, "the papers spider reads the papers of a task or of a query"),
        (
            ["-a", "task_id=t1", "-a", "query_id=1"],
            {},
            "task_id and query_id cannot go together",
        ),
        (["-a", "query_id=first"], {}, "query_id must be a whole number >= 1 (got 'first')"),
        (["-a", "task_id=t1", "-a", "engine=mojeek"], {}, "unknown spider argument 'engine'"),
        (["-a", "task_id=nosuch"], {}, "task_id 'nosuch' has no queries in the store"),
        (["-a", "query_id=7"], {}, "query_id 7 is not in the store"),
        (
            ["-a", "task_id=t1"],
            {"LYRA_PAPERS_DAILY_BUDGET": "lots"},
            "LYRA_PAPERS_DAILY_BUDGET must be a whole number of pages of at least 1",
        ),
    ],
)
def test_bad_arguments_print_one_message_and_send_nothing(simulator, db_path, args, env, message):
    result = run_scrapy("crawl", "papers", *args, env={**scrapy_env(simulator, db_path), **env})

    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert simulator.requests() == []
