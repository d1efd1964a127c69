"""What only the PostgreSQL store has to show, on a real server: its schema version applied once
however many nodes open it at once, batch entries spread over processes without a double take,
an abstract from a landing page never written between a paper save's reads and writes, and clear
errors that never show the password."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import psycopg
import pytest

from lyra_crawl.backend_urls import sqlite_url, urls_from_settings
from lyra_crawl.backends import Backends, open_backends
from lyra_crawl.backends.migrations import HEAD as SCHEMA_VERSION
from lyra_crawl.backends.statements import PAPERS_LOCK_KEY
from lyra_crawl.quoting import redact_url
from lyra_crawl.records import BackendError, LandingPage
from tests.backends.lock_holders import waiting_for_an_advisory_lock
from tests.backends.test_coordination import numbered_batch, run_together
from tests.backends.test_store import (
    postgres_store,
    record,
    save_the_paper,
    store_the_result,
)
from tests.conftest import in_own_loop, run_scrapy, scrapy_env
from tests.servers.postgres import PASSWORD


def schema_versions(url: str) -> list[tuple[int]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT version FROM schema_version").fetchall()


def test_the_schema_version_is_applied_on_open_and_opening_again_keeps_the_data(
    postgres_url, tmp_path
):
    store = postgres_store(postgres_url, tmp_path)
    query_id = store.run(lambda backends: backends.store.start_query(record()))

    assert schema_versions(postgres_url) == [(SCHEMA_VERSION,)]
    assert store.run(lambda backends: backends.store.query_ids()) == [query_id]
    assert schema_versions(postgres_url) == [(SCHEMA_VERSION,)]


def test_nodes_opening_a_new_database_at_once_apply_the_schema_once(postgres_url, tmp_path):
    env = {"LYRA_COORDINATION_URL": sqlite_url(tmp_path / "coordination.sqlite3")}

    opened = run_together(postgres_url, *[["open"]] * 4, env=env)

    assert opened == [[]] * 4
    assert schema_versions(postgres_url) == [(SCHEMA_VERSION,)]


def test_a_database_of_another_schema_version_is_refused_clearly(postgres_url, tmp_path):
    postgres_store(postgres_url, tmp_path).run(lambda backends: backends.store.query_ids())
    with psycopg.connect(postgres_url) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION + 1,))

    with pytest.raises(BackendError) as raised:
        postgres_store(postgres_url, tmp_path).run(lambda backends: backends.store.query_ids())

    message = str(raised.value)
    assert f"holds lyra schema version {SCHEMA_VERSION + 1}" in message
    assert redact_url(postgres_url) in message and PASSWORD not in message


def test_processes_taking_batch_entries_never_take_the_same_one(postgres_url, tmp_path):
    store = postgres_store(postgres_url, tmp_path)

    batch_id, entry_ids = store.run(lambda backends: numbered_batch(backends, 400))

    taken = run_together(
        postgres_url,
        *[["take", str(batch_id), "3"]] * 4,
        env={"LYRA_COORDINATION_URL": store.settings["LYRA_COORDINATION_URL"]},
    )

    every = [entry_id for process in taken for entry_id in process]
    assert sorted(every) == sorted(entry_ids), "every entry taken, none twice"
    assert all(taken), "every process took some: they ran side by side"
    entries = store.run(lambda backends: backends.store.batch_entries(batch_id))
    assert {(entry.state, entry.attempts) for entry in entries} == {("done", 1)}


def test_a_lost_server_is_a_backend_error_naming_the_url_without_its_password(
    postgres_server, postgres_url, tmp_path
):
    store = postgres_store(postgres_url, tmp_path)
    database = postgres_url.rpartition("/")[2]

    async def work(backends: Backends) -> str:
        await backends.store.query_ids()
        # Every connection of the store's pool ends, as when the server restarts.
        with postgres_server.admin() as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (database,),
            )
        with pytest.raises(BackendError) as raised:
            await backends.store.start_query(record())
        return str(raised.value)

    message = store.run(work)

    assert message.startswith(f"LYRA_DB_URL {redact_url(postgres_url)} failed (")
    assert PASSWORD not in message


def test_an_unreachable_server_at_open_names_the_url_and_the_fix_without_the_password(
    tmp_path, refused_port
):
    url = f"postgresql://lyra:{PASSWORD}@127.0.0.1:{refused_port}/lyra"

    with pytest.raises(BackendError) as raised:
        in_own_loop(open_backends(urls_from_settings(postgres_store(url, tmp_path).settings)))

    assert str(raised.value) == (
        f"LYRA_DB_URL {redact_url(url)} is unreachable (connection refused): "
        "start PostgreSQL there or fix the URL"
    )


def test_a_crawl_with_postgresql_unreachable_prints_one_error_and_sends_nothing(
    simulator, tmp_path, refused_port
):
    url = f"postgresql://lyra:{PASSWORD}@127.0.0.1:{refused_port}/lyra"
    env = {
        **scrapy_env(simulator, tmp_path / "unused.sqlite3"),
        "LYRA_DB_PATH": "",
        "LYRA_DB_URL": url,
        "LYRA_COORDINATION_URL": sqlite_url(tmp_path / "coordination.sqlite3"),
    }

    result = run_scrapy("crawl", "serp", "-a", "query=x", env=env)

    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: LYRA_DB_URL {redact_url(url)} is unreachable (connection refused): "
        "start PostgreSQL there or fix the URL"
    ]
    assert "Traceback" not in result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    assert simulator.requests() == []


def test_an_abstract_from_a_landing_page_waits_for_a_paper_save_in_progress(postgres_url, tmp_path):
    # A save reads the papers it matches and writes them whole, under the papers lock: an
    # abstract read from a landing page meanwhile waits for it, else the save wrote the paper
    # over it as it had read it, without the abstract. It waits before it touches the paper's
    # landing page, which a save merging the paper into another moves: else each waited for
    # the other.
    abstract = "An abstract read from the paper's landing page while a save was in progress."

    async def work(backends):
        store = backends.store
        query_id = await store.start_query(record(task_id="t"))
        await store_the_result(store, query_id, "openalex")
        await save_the_paper(store, query_id, "openalex")
        (queued,) = await store.papers_to_read(task_id="t")
        asked = LandingPage(queued.paper_id, queued.fetch_url, "blocked", "HTTP 403", 403)
        await store.record_landing_page(asked, None)
        with psycopg.connect(postgres_url, autocommit=True) as saving:
            saving.execute("SELECT pg_advisory_lock(%s)", (PAPERS_LOCK_KEY,))  # a save's lock
            landing = asyncio.ensure_future(
                store.record_landing_page(
                    replace(asked, outcome="abstract", detail="", http_status=200), abstract
                )
            )
            await waiting_for_an_advisory_lock(saving)
            during = saving.execute(
                "SELECT abstract FROM papers WHERE id = %s", (queued.paper_id,)
            ).fetchone()
            saving.execute("SET lock_timeout = '2s'")
            moved = saving.execute(  # as a save moves the landing pages of a paper it merges
                "UPDATE landing_pages SET paper_id = paper_id WHERE paper_id = %s",
                (queued.paper_id,),
            ).rowcount
            saving.execute("SELECT pg_advisory_unlock(%s)", (PAPERS_LOCK_KEY,))
        await landing
        (stored,) = await store.papers_of(query_id)
        return during, moved, stored

    during, moved, stored = postgres_store(postgres_url, tmp_path).run(work)
    assert during == (None,), "not written while the save held the lock"
    assert moved == 1, "the landing page was not held while waiting for the lock"
    assert stored.abstract == abstract
    assert stored.evidence == "abstract"
