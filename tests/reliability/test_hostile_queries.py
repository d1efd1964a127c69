"""Hostile queries: stored verbatim, sent URL-encoded, and never sent to any host but the engine's.

Refused queries (blank, longer than the engine takes) end the run with one clear message and no
request. The URL builder's host check is proven for any text by hypothesis; the crawls go to the
simulator, whose request log shows every request that left.
"""

from __future__ import annotations

import subprocess
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_twisted
from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_crawl.config import load_config
from lyra_crawl.engines.request import (
    HostMismatchError,
    QueryError,
    build_page_request,
    ensure_engine_host,
    expected_host,
)
from tests.conftest import query_db, run_crawl, run_scrapy, scrapy_env

CONFIG = load_config()
ENGINES = sorted(CONFIG.engines)

HOSTILE_QUERIES = {
    "nul_and_controls": "deep\x00learning\x01\x07\x1b[31m\r\nHost: evil.example\t",
    "right_to_left": "\u202eevil.example\u202c \u05e9\u05dc\u05d5\u05dd "
    "\u0645\u0631\u062d\u0628\u0627",
    "combining": "Z\u0351\u0352\u0353a\u0354\u0355l\u0356g\u0357o e\u0301\u0301\u0301",
    "emoji": "🦀 rust 👩‍👩‍👧‍👦 🇺🇦 \U0001f9ec",
    "sql": "'; DROP TABLE serp_items; -- \" OR 1=1 /*",
    "url_query": "?engine=x#fragment&q=other",
    "url_authority": "//evil.example/path @evil.example",
    "url_traversal": "%2F..%2F..%2Fetc%2Fpasswd ../../admin %00",
    "shell": "$(rm -rf /) `id` ; | & > /tmp/x && echo $HOME *",
    "backslashes": "\\\\evil.example\\share https:\\\\evil.example",
}
# What an argv could mangle (NUL cannot travel in one at all: it is tried in-process only).
ARGV_QUERIES = [HOSTILE_QUERIES[name] for name in ("shell", "url_authority", "right_to_left")]


def query_key(engine: str) -> str:
    """The parameter that carries the query text to `engine`."""
    (key,) = [k for k, v in CONFIG.engine(engine).params.items() if "{query}" in v]
    return key


def sent_query(engine: str, url: str, formdata) -> str:
    """The query text as the engine receives it, decoded from the URL or the form."""
    if formdata is not None:
        return dict(formdata)[query_key(engine)]
    return parse_qs(urlsplit(url).query, keep_blank_values=True)[query_key(engine)][0]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    engine=st.sampled_from(ENGINES),
    query=st.text(min_size=1, max_size=300)
    | st.sampled_from(sorted(HOSTILE_QUERIES.values())).map(lambda q: q * 3),
    page=st.integers(1, 5),
)
def test_any_query_builds_a_request_to_the_engines_host_only(engine, query, page):
    spec = CONFIG.engine(engine)
    try:
        request = build_page_request(spec, query, page)
    except QueryError as exc:
        assert "query is empty" in str(exc) or "at most" in str(exc) or "pages" in str(exc)
        return
    parts = urlsplit(request.url)
    assert parts.scheme == "https" and parts.hostname == expected_host(spec)
    assert parts.path == urlsplit(spec.url.replace("{language}", "en")).path
    assert not parts.fragment and "@" not in parts.netloc
    template = spec.params[query_key(engine)]
    assert sent_query(engine, request.url, request.formdata) == template.replace("{query}", query)


HOST_TRICKS = (
    "@evil.example/",
    ".evil.example/",
    ":443@evil.example/",
    "\\@evil.example/",
    "%2F%2Fevil.example/",
    "#@evil.example/",
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    engine=st.sampled_from(ENGINES),
    scheme=st.sampled_from(["https", "http", "javascript", "file", "ftp", ""]),
    trick=st.sampled_from(HOST_TRICKS) | st.text(max_size=30),
    prefix_host=st.booleans(),
)
def test_the_host_check_refuses_every_other_host(engine, scheme, trick, prefix_host):
    spec = CONFIG.engine(engine)
    host = expected_host(spec)
    url = f"{scheme}://{host if prefix_host else ''}{trick}"
    try:
        checked = ensure_engine_host(spec, url)
    except (HostMismatchError, ValueError):
        return
    parts = urlsplit(checked)
    assert parts.scheme in ("http", "https") and parts.hostname == host


@pytest.mark.e2e
@pytest.mark.parametrize("query", HOSTILE_QUERIES.values(), ids=HOSTILE_QUERIES.keys())
@pytest.mark.parametrize("engine", ["mojeek", "duckduckgo", "openalex"])
@pytest_twisted.ensureDeferred
async def test_a_hostile_query_is_stored_verbatim_and_sent_encoded(
    simulator, db_path, engine, query
):
    crawler = await run_crawl(
        simulator,
        db_path,
        query=query,
        engine=engine,
        sources="serp",
        serp_max_pages="2",
        cache="off",
    )

    (row,) = query_db(db_path, "SELECT query_text, status, items FROM queries")
    assert row["query_text"] == query and row["status"] == "finished" and row["items"] > 0
    requests = simulator.requests()
    assert len(requests) == crawler.stats.get_value("downloader/request_count") == 2
    spec = CONFIG.engine(engine)
    for entry in requests:
        assert entry["engine"] == engine
        assert entry["path"] == urlsplit(spec.url).path
        assert entry["params"][query_key(engine)] == query
    stored = query_db(db_path, "SELECT COUNT(*) FROM serp_items")[0][0]
    assert stored == row["items"]


def crawl_mojeek(simulator, db_path, query: str, *extra: str) -> subprocess.CompletedProcess:
    """`scrapy crawl serp` of `query` on mojeek, in a subprocess: the argv path of a query."""
    return run_scrapy(
        *("crawl", "serp", "-a", f"query={query}", "-a", "engine=mojeek", "-a", "sources=serp"),
        *extra,
        env=scrapy_env(simulator, db_path),
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "query is required and must not be blank"),
        (" \t\n ", "query is required and must not be blank"),
        ("x" * 10_000, "query is 10000 characters, engine 'mojeek' takes at most 500"),
        # A byte that is not UTF-8 reaches Python's argv as a lone surrogate.
        ("caf\udce9", "query is not UTF-8 text (got 'caf\\udce9'): fix its encoding"),
    ],
    ids=["empty", "whitespace", "10000_chars", "not_utf8"],
)
def test_a_refused_query_is_one_clear_error_and_no_request(simulator, db_path, query, message):
    result = crawl_mojeek(simulator, db_path, query)

    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert simulator.requests() == []


@pytest.mark.long
@pytest.mark.e2e
def test_hostile_queries_through_scrapy_crawl_stay_on_the_engine(simulator, db_path):
    for query in ARGV_QUERIES:
        result = crawl_mojeek(simulator, db_path, query, "-a", "serp_max_pages=1")
        assert result.returncode == 0, result.stderr[-2000:]

    stored = [row[0] for row in query_db(db_path, "SELECT query_text FROM queries ORDER BY id")]
    assert stored == ARGV_QUERIES
    assert [entry["params"]["q"] for entry in simulator.requests()] == ARGV_QUERIES
    assert {entry["engine"] for entry in simulator.requests()} == {"mojeek"}
