"""Batch files: parsing (pure), `scrapy batch` here and on a real Scrapyd, the cache skip."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lyra_crawl.batch.files import BatchError, entry_specs, load_batch, parse_batch
from lyra_crawl.batch.scrapyd import job_settings
from lyra_crawl.config import load_config
from lyra_crawl.query.cache_key import cache_key
from tests.conftest import ROOT, query_db, run_scrapy, with_store
from tests.scrapyd_server import free_port

EXAMPLE = ROOT / "config" / "batch.example.yaml"
API_KEY = "s2-key-never-logged"


@pytest.fixture(scope="module")
def config():
    return load_config()


def batch_env(simulator, db_path: Path) -> dict[str, str]:
    return {
        "LYRA_SIMULATOR_URL": simulator.url,
        "LYRA_DB_PATH": str(db_path),
        "LYRA_RATE_LIMIT_ENABLED": "false",
    }


# -- the key and the file format (pure) ------------------------------------------------------


def test_cache_key_sorts_engines_and_names_every_part():
    assert cache_key("sea level", ["mojeek", "openalex"], None, 3) == cache_key(
        "sea level", ["openalex", "mojeek"], None, 3
    )
    assert cache_key("sea level", ["openalex", "mojeek"], "year", 3) == (
        "sea level|mojeek,openalex|year|serp_max_pages=3"
    )


def test_entries_take_the_defaults_and_override_them(config):
    batch = parse_batch(
        "defaults: {engine: mojeek, serp_max_pages: 2, task_id: t}\n"
        "queries:\n"
        "  - Climate  Adaptation\n"
        "  - {query: floods, engine: duckduckgo, serp_max_pages: 4, sources: [serp, openalex]}\n",
        config,
    )

    first, second = batch.entries
    assert batch.rejected == []
    assert first.spider_args == {
        "engine": "mojeek",
        "serp_max_pages": "2",
        "task_id": "t",
        "query": "Climate  Adaptation",
    }
    # No sources given: the spider's default, the engine plus Semantic Scholar and OpenAlex.
    assert (
        first.cache_key == "climate adaptation|mojeek,openalex,semantic_scholar||serp_max_pages=2"
    )
    assert second.spider_args["engine"] == "duckduckgo"
    assert second.spider_args["sources"] == "serp,openalex"
    assert second.cache_key == "floods|duckduckgo,openalex||serp_max_pages=4"


def test_an_entry_may_bound_its_citation_graph_and_a_bad_bound_is_rejected(config):
    batch = parse_batch(
        "defaults: {citation_depth: 2}\n"
        "queries:\n"
        "  - {query: peat, citation_top_k: 3}\n"
        "  - {query: bogs, citation_depth: 9}\n",
        config,
        filename="b.yaml",
    )

    (entry,) = batch.entries
    assert entry.spider_args == {"citation_depth": "2", "citation_top_k": "3", "query": "peat"}
    (rejected,) = batch.rejected
    assert rejected.message.startswith(
        "b.yaml: entry 2: citation_depth must be a whole number from 0 to 2 (got '9')"
    )


def test_an_entry_without_engine_has_no_cache_key(config):
    (entry,) = parse_batch("queries: [drought]\n", config).entries

    assert entry.cache_key is None
    assert "engine" not in entry.spider_args


def test_bad_entries_are_rejected_with_their_position_and_the_rest_kept(config):
    batch = parse_batch(
        "queries:\n"
        "  - fine\n"
        "  - {query: too deep, serp_max_pages: 11}\n"
        "  - {engine: mojeek}\n"
        "  - {query: x, colour: blue}\n"
        "  - {query: y, sources: 7}\n",
        config,
        filename="b.yaml",
    )

    assert [entry.position for entry in batch.entries] == [1]
    messages = {rejected.position: rejected.message for rejected in batch.rejected}
    assert messages[2].startswith("b.yaml: entry 2: serp_max_pages must be a whole number")
    assert "query is required" in messages[3]
    assert messages[4].startswith("b.yaml: entry 4: unknown option 'colour': use one of engine,")
    assert "sources must be a list of names" in messages[5]
    # The store keeps the problem alone: its row already says which entry of which batch.
    stored = {spec.position: spec.rejected for spec in entry_specs(batch)}
    assert stored[2].startswith("serp_max_pages must be a whole number")
    assert stored[1] == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("queries: [a\n", "not valid YAML"),
        ("- a\n- b\n", "expected a mapping with a 'queries:' list"),
        ("query: [a]\n", "expected a mapping with a 'queries:' list"),
        ("queries: [a]\nextra: 1\n", "unknown key 'extra'"),
        ("defaults: {pages: 3}\nqueries: [a]\n", "defaults: unknown option 'pages': use one of"),
    ],
)
def test_an_unusable_file_is_one_error(config, text, message):
    with pytest.raises(BatchError, match=message):
        parse_batch(text, config)


def test_the_example_file_is_a_valid_batch(config):
    batch = load_batch(EXAMPLE, config)

    assert batch.rejected == []
    assert len(batch.entries) >= 3


# -- scrapy batch here -----------------------------------------------------------------------


def test_example_batch_stores_every_query_then_skips_the_cached_ones(simulator, db_path, config):
    entries = load_batch(EXAMPLE, config).entries

    first = run_scrapy("batch", str(EXAMPLE), env=batch_env(simulator, db_path))

    assert first.returncode == 0, first.stderr[-3000:]
    rows = query_db(db_path, "SELECT id, query_text, status, items FROM queries ORDER BY id")
    assert sorted(row["query_text"] for row in rows) == sorted(e.query for e in entries)
    assert all(row["status"] == "finished" and row["items"] > 0 for row in rows)
    pages = query_db(db_path, "SELECT COUNT(*) AS n FROM serp_items WHERE page_number IS NULL")
    assert pages[0]["n"] == 0
    assert f"{len(entries)} of {len(entries)} entries succeeded" in first.stdout

    # The spider writes cache entries on another branch; here the test writes what it will.
    now = datetime.now(UTC)
    by_text = {row["query_text"]: row["id"] for row in rows}
    expired = entries[0]

    async def write_cache_entries(backends) -> None:
        store = backends.store
        for entry in entries:
            await store.store_cache_entry(
                entry.cache_key,
                by_text[entry.query],
                created_at=now,
                expires_at=now + timedelta(hours=1),
            )
        await store.store_cache_entry(
            expired.cache_key,
            by_text[expired.query],
            created_at=now - timedelta(days=2),
            expires_at=now - timedelta(days=1),
        )

    with_store(db_path, write_cache_entries)
    requests_before = len(simulator.requests())

    second = run_scrapy("batch", str(EXAMPLE), env=batch_env(simulator, db_path))

    assert second.returncode == 0, second.stderr[-3000:]
    for entry in entries[1:]:
        assert f"entry {entry.position}: skipped, fresh in the cache" in second.stdout
    assert f"entry {expired.position}: skipped" not in second.stdout
    again = query_db(
        db_path, "SELECT query_text FROM queries WHERE id > ?", (max(by_text.values()),)
    )
    assert [row["query_text"] for row in again] == [expired.query]
    assert len(simulator.requests()) > requests_before


def test_bad_entries_are_reported_and_the_rest_still_run(simulator, db_path, tmp_path):
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {engine: mojeek, serp_max_pages: 1}\n"
        "queries:\n"
        "  - wetlands\n"
        "  - {query: mangroves, strategy: greedy}\n"
        "  - {query: peatlands, engine: duckduckgo}\n"
    )

    result = run_scrapy("batch", str(batch_file), env=batch_env(simulator, db_path))

    assert result.returncode == 1
    assert f"error: {batch_file}: entry 2: strategy must be one of" in result.stderr
    rows = query_db(db_path, "SELECT query_text, status FROM queries ORDER BY query_text")
    assert [(r["query_text"], r["status"]) for r in rows] == [
        ("peatlands", "finished"),
        ("wetlands", "finished"),
    ]
    assert "2 of 3 entries succeeded" in result.stdout


def test_an_unreadable_batch_file_exits_2_before_any_request(simulator, db_path, tmp_path):
    result = run_scrapy("batch", str(tmp_path / "none.yaml"), env=batch_env(simulator, db_path))

    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "none.yaml: cannot be read" in errors[0]
    assert simulator.requests() == []


# -- scrapy batch --scrapyd ------------------------------------------------------------------


def test_batch_on_scrapyd_waits_judges_jobs_by_their_status_rows_and_stores_what_a_local_run_does(
    scrapyd, simulator, db_path, tmp_path
):
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text(
        "defaults: {engine: mojeek, serp_max_pages: 2, sources: [serp]}\n"
        "queries: [tundra fires, {query: boreal forest, engine: duckduckgo}]\n"
    )

    result = run_scrapy(
        "batch",
        str(batch_file),
        "--scrapyd",
        scrapyd.url,
        "--poll-interval",
        "0.5",
        "--timeout",
        "180",
        env={
            **batch_env(simulator, db_path),
            "LYRA_PROGRESS_INTERVAL": "0.5",
            "LYRA_S2_API_KEY": API_KEY,
        },
    )

    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    rows = query_db(db_path, "SELECT query_text, status, job_id, items FROM queries ORDER BY id")
    assert sorted(r["query_text"] for r in rows) == ["boreal forest", "tundra fires"]
    assert all(r["status"] == "finished" and r["items"] == 20 for r in rows)
    for row in rows:
        assert f"(job {row['job_id']} on {scrapyd.url})" in result.stdout
    assert "finished (job" in result.stdout
    assert "2 of 2 entries succeeded" in result.stdout
    # Progress read from the store while waiting, the last line once the job finished, with
    # the rate-limit waits the job recorded (none: rate limiting is off here).
    progress = re.findall(r"^batch \d+: \d+ of 2 entries done, .*$", result.stdout, re.M)
    assert progress, result.stdout
    assert progress[-1].startswith(
        "batch 1: 2 of 2 entries done, 0 running, 0 pending, 0 failed, 0 rejected; "
        "4 requests (duckduckgo 2, mojeek 2); 40 items; blocks none; rate waits none; elapsed "
    )
    # The job logged its own progress lines (with its waits) in Scrapyd's job log.
    job_log = scrapyd.job_log("lyra_crawl", rows[0]["job_id"])
    assert "[lyra_crawl.batch.extension] INFO: batch 1: 2 of 2 entries done" in job_log
    # An API key never travels with a job: Scrapyd logs job arguments.
    assert "note: LYRA_S2_API_KEY holds an API key, so it is not sent" in result.stdout
    assert API_KEY not in scrapyd.log_tail(10**7) and API_KEY not in job_log
    # The same batch run here stores the very same rows.
    local_db = tmp_path / "local.sqlite3"
    local = run_scrapy("batch", str(batch_file), env=batch_env(simulator, local_db))
    assert local.returncode == 0, local.stderr[-3000:]
    assert " ERROR: " not in local.stderr, local.stderr[-3000:]
    on_scrapyd, here = stored_results(db_path), stored_results(local_db)
    assert len(on_scrapyd["pages"]) == 4 and len(on_scrapyd["items"]) == 40
    assert on_scrapyd["papers"]
    assert on_scrapyd == here


def stored_results(db_path: Path) -> dict[str, list[tuple[object, ...]]]:
    """What a batch stored (queries, pages, items, papers), without ids, times and the job or
    process that ran it: to compare two runs row by row."""
    by_query = "JOIN queries AS q ON q.id = {}.query_id"
    tables = {
        "queries": "SELECT query_text, engine, sources, serp_max_pages, strategy, status,"
        " stop_reason, errors, pages_fetched, items, harvest_rate, attribution, cache_hit"
        " FROM queries",
        "pages": "SELECT q.query_text, p.source, p.page_number, p.outcome, p.results,"
        " p.items_stored, p.novelty_rate, p.harvest_rate, p.url FROM serp_pages AS p "
        + by_query.format("p"),
        "items": "SELECT q.query_text, i.source, i.kind, i.rank, i.page_number, i.position,"
        " i.url, i.normalized_url, i.title, i.snippet, i.doi, i.relevance, i.fused_rank,"
        " paper.normalized_title FROM serp_items AS i "
        + by_query.format("i")
        + " LEFT JOIN papers AS paper ON paper.id = i.paper_id",
        "papers": "SELECT normalized_title, doi, year, attribution, sources, evidence,"
        " fetch_url, evidence_reason FROM papers",
    }
    return {
        name: sorted((tuple(row) for row in query_db(db_path, sql)), key=repr)
        for name, sql in tables.items()
    }


def test_batch_on_an_unreachable_scrapyd_says_so_once_and_keeps_the_batch(
    simulator, db_path, tmp_path
):
    batch_file = tmp_path / "batch.yaml"
    batch_file.write_text("defaults: {engine: mojeek}\nqueries: [tundra fires, boreal forest]\n")
    node = f"http://127.0.0.1:{free_port()}"

    result = run_scrapy(
        "batch", str(batch_file), "--scrapyd", node, env=batch_env(simulator, db_path)
    )

    assert result.returncode == 1, result.stdout + result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and f"Scrapyd at {node} refused to schedule serp" in errors[0]
    assert "Traceback" not in result.stderr
    # Recorded and left to run: the same file continues it once Scrapyd is up.
    entries = query_db(db_path, "SELECT state FROM batch_entries ORDER BY position")
    assert [row["state"] for row in entries] == ["pending", "pending"]


def test_job_settings_send_paths_absolute_no_secret_and_where_the_backends_are():
    sent = job_settings(
        {
            "LYRA_DB_URL": "postgresql://lyra:pw-123@db.example/lyra",
            "LYRA_COORDINATION_URL": "sqlite:///data/coordination.sqlite3",
            "LYRA_CONFIG_DIR": "config",
            "LYRA_S2_API_KEY": API_KEY,
            "LYRA_OPENALEX_API_KEY": "",
            "LYRA_RATE_LIMIT_ENABLED": False,
            "LOG_LEVEL": "INFO",
        }
    )

    coordination = f"sqlite:///{Path('data/coordination.sqlite3').resolve()}"
    assert sent.withheld == {"LYRA_DB_URL": "a password", "LYRA_S2_API_KEY": "an API key"}
    # The store's URL is withheld, its place is not: a node whose own LYRA_DB_URL names
    # another place refuses the job.
    assert sent.forwarded == {
        "LYRA_COORDINATION_URL": coordination,
        "LYRA_CONFIG_DIR": str(Path("config").resolve()),
        "LYRA_EXPECT_COORDINATION": coordination,
        "LYRA_EXPECT_DB": "postgresql://db.example:5432/lyra",
        "LYRA_RATE_LIMIT_ENABLED": "False",
    }
