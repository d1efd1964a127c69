"""Where a job must store and coordinate, told without secrets, and a node's refusal when it
resolves them elsewhere (lyra_crawl.batch.targets): the pure part. The same on real Scrapyd
nodes, Redis and PostgreSQL: tests/test_cluster_targets.py."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from lyra_crawl.backend_urls import backend_target
from lyra_crawl.batch.scrapyd import job_settings
from lyra_crawl.batch.targets import (
    NodeReport,
    TargetMismatch,
    check_expected,
    resolve,
)

REDIS = "redis://:s3cret@10.0.0.5:6379/0"
POSTGRES = "postgresql://lyra:pg-s3cret@10.0.0.5:5432/lyra"


@pytest.mark.parametrize(
    ("url", "target"),
    [
        (POSTGRES, "postgresql://10.0.0.5:5432/lyra"),
        ("postgres://lyra@DB.example/lyra?sslmode=require", "postgresql://db.example:5432/lyra"),
        ("postgresql://lyra@db.example", "postgresql://db.example:5432/lyra"),
        ("postgresql:///lyra?host=/run/postgresql", "postgresql://:5432/lyra?host=/run/postgresql"),
        (REDIS, "redis://10.0.0.5:6379/0"),
        ("redis://10.0.0.5", "redis://10.0.0.5:6379/0"),
        ("redis://10.0.0.5:6379?db=2", "redis://10.0.0.5:6379/2"),
        ("rediss://lyra:pw@[::1]:7000/3", "rediss://[::1]:7000/3"),
        ("sqlite:////srv/lyra/lyra.sqlite3", "sqlite:////srv/lyra/lyra.sqlite3"),
        ("sqlite:///data/lyra.sqlite3", f"sqlite:///{Path('data/lyra.sqlite3').resolve()}"),
    ],
)
def test_a_backends_target_names_scheme_host_port_and_database_and_never_a_secret(url, target):
    assert backend_target(url) == target
    # Spelled once: a target read again is itself.
    assert backend_target(target) == target


def test_a_job_is_told_where_its_backends_are_and_not_their_passwords():
    sent = job_settings({"LYRA_DB_URL": POSTGRES, "LYRA_COORDINATION_URL": REDIS})

    assert sent.withheld == {"LYRA_DB_URL": "a password", "LYRA_COORDINATION_URL": "a password"}
    assert sent.forwarded == {
        "LYRA_EXPECT_DB": "postgresql://10.0.0.5:5432/lyra",
        "LYRA_EXPECT_COORDINATION": "redis://10.0.0.5:6379/0",
    }


def node(**settings: str) -> dict[str, str]:
    """A node's settings under a job told the store and coordinator above."""
    return {
        "LYRA_EXPECT_DB": "postgresql://10.0.0.5:5432/lyra",
        "LYRA_EXPECT_COORDINATION": "redis://10.0.0.5:6379/0",
        **settings,
    }


def refusal(settings: dict[str, str]) -> str:
    with pytest.raises(TargetMismatch) as refused:
        check_expected(settings)
    message = str(refused.value)
    assert "s3cret" not in message
    return message


def test_a_node_that_stores_and_coordinates_where_its_job_does_runs_it():
    check_expected(node(LYRA_DB_URL=POSTGRES, LYRA_COORDINATION_URL=REDIS))
    # Another user or password on the same server is the same place.
    check_expected(
        node(
            LYRA_DB_URL="postgres://other@10.0.0.5/lyra",
            LYRA_COORDINATION_URL="redis://lyra:other@10.0.0.5/0",
        )
    )
    # A job told nothing (scheduled by hand) runs wherever the node says.
    check_expected({"LYRA_COORDINATION_URL": "redis://10.0.0.6/0"})


def test_a_node_without_the_coordinator_refuses_rather_than_keep_quotas_of_its_own():
    message = refusal(node(LYRA_DB_URL=POSTGRES))

    default = Path("data/lyra.sqlite3").resolve()
    assert message == (
        "this job coordinates through redis://10.0.0.5:6379/0, but LYRA_COORDINATION_URL is "
        f"not set on this node (its default: sqlite:///{default}): set LYRA_COORDINATION_URL "
        "in this node's Scrapyd environment, see docs/deployment.md"
    )


def test_a_node_on_another_redis_or_database_refuses_naming_both_in_one_message():
    message = refusal(
        node(
            LYRA_DB_URL="postgresql://lyra:pg-s3cret@10.0.0.5:5432/lyra_test",
            LYRA_COORDINATION_URL="redis://:s3cret@10.0.0.5:6379/1",
        )
    )

    assert message == (
        "this job stores in postgresql://10.0.0.5:5432/lyra, but this node's LYRA_DB_URL names "
        "postgresql://lyra:***@10.0.0.5:5432/lyra_test: set LYRA_DB_URL in this node's Scrapyd "
        "environment, see docs/deployment.md; this job coordinates through "
        "redis://10.0.0.5:6379/0, but this node's LYRA_COORDINATION_URL names "
        "redis://:***@10.0.0.5:6379/1: set LYRA_COORDINATION_URL in this node's Scrapyd "
        "environment, see docs/deployment.md"
    )


def test_a_node_storing_in_a_file_of_its_own_refuses_a_job_of_a_shared_store():
    message = refusal(node(LYRA_DB_PATH="/srv/lyra.sqlite3", LYRA_COORDINATION_URL=REDIS))

    assert message.startswith(
        "this job stores in postgresql://10.0.0.5:5432/lyra, but this node's LYRA_DB_PATH "
        "names sqlite:////srv/lyra.sqlite3: set LYRA_DB_URL"
    )


def test_an_expected_place_given_by_hand_may_be_any_url_of_it():
    check_expected(
        {
            "LYRA_EXPECT_COORDINATION": "redis://10.0.0.5",
            "LYRA_COORDINATION_URL": REDIS,
            "LYRA_DB_URL": "sqlite:////srv/lyra.sqlite3",
        }
    )


def test_a_node_report_reads_back_from_its_log_line():
    found = resolve(node(LYRA_DB_URL=POSTGRES))
    report = NodeReport("node3", (replace(found[0], reachable=True), found[1]))
    log = f"2026-01-01 [lyra_crawl.commands.crawl] INFO: {report.log_line()}\n"

    assert NodeReport.from_log(log) == report
    assert NodeReport.from_log("no report here\n") is None
    assert not report.ready
    assert "s3cret" not in report.log_line()
    assert report.lines("http://node3:6800") == [
        "http://node3:6800 (host node3): NOT READY",
        "  store        postgresql://lyra:***@10.0.0.5:5432/lyra (its LYRA_DB_URL): as expected, "
        "reachable",
        f"  coordinator  sqlite:///{Path('data/lyra.sqlite3').resolve()} (LYRA_COORDINATION_URL "
        "not set: its default): WRONG, expected redis://10.0.0.5:6379/0",
    ]
