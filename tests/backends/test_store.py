"""The result store on every store backend, a real SQLite file and a real PostgreSQL: its
QueryStore role (queries, pages stored whole with their items), that one store plays every
role, and the differential test, the same calls on both backends giving equal records. The
other roles' contract tests: test_batch_store.py (BatchStore, BatchReports),
test_paper_index.py and test_citation_store.py (PaperStore), test_landing_pages.py
(LandingPageStore), test_cache_and_interventions.py (SearchCache, InterventionQueue).

Each test runs once per backend.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, fields, is_dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import psycopg
import pytest

from lyra_crawl.backend_urls import sqlite_path, sqlite_url
from lyra_crawl.backends import Backends, with_backends
from lyra_crawl.backends.protocols import ROLES
from lyra_crawl.backends.rows import ITEM_COLUMNS
from lyra_crawl.items import ResultItem
from lyra_crawl.papers.canonical import CanonicalPaper, PaperRecord
from lyra_crawl.records import (
    CandidateRecord,
    CitationFetch,
    EntrySpec,
    LandingPage,
    PageRecord,
    QueryRecord,
    SelectionCorpus,
    SelectionRecord,
    StageRun,
    StageScores,
    StoredItem,
    StoredPaper,
)
from tests.backends.lock_holders import FileLockHolder, PapersLockHolder
from tests.conftest import in_own_loop

T = TypeVar("T")
INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00")


@dataclass(frozen=True)
class StoreUnderTest:
    """One backend's store: the settings that name it and the error a broken row raises."""

    name: str
    settings: dict[str, str]
    integrity_error: type[Exception]

    def run(self, work: Callable[[Backends], Awaitable[T]]) -> T:
        return in_own_loop(with_backends(self.settings, work))


def sqlite_store(folder: Path) -> StoreUnderTest:
    return StoreUnderTest(
        "sqlite", {"LYRA_DB_URL": sqlite_url(folder / "db.sqlite3")}, sqlite3.IntegrityError
    )


def postgres_store(url: str, folder: Path) -> StoreUnderTest:
    settings = {
        "LYRA_DB_URL": url,
        "LYRA_COORDINATION_URL": sqlite_url(folder / "coordination.sqlite3"),
    }
    return StoreUnderTest("postgresql", settings, psycopg.IntegrityError)


def record(**changes: Any) -> QueryRecord:
    base = QueryRecord(
        query_text="x",
        normalized_query="x",
        engine="mojeek",
        serp_page=1,
        serp_max_pages=3,
        strategy="auto",
    )
    return replace(base, **changes)


def item(query_id: int, rank: int, url: str, **fields: object) -> ResultItem:
    values: dict = {
        "query_id": query_id,
        "source": "mojeek",
        "rank": rank,
        "page_number": 1,
        "position": rank,
        "normalized_url": url,
        **fields,
    }
    return ResultItem(url, f"t{rank}", **values)


def test_a_page_is_stored_whole_or_not_at_all(store):
    async def work(backends):
        store_ = backends.store
        query_id = await store_.start_query(record())
        page = PageRecord(
            query_id=query_id, source="mojeek", page_number=1, outcome="ok", results=2
        )
        broken = [item(query_id, 1, "https://a.example/"), item(query_id, 2, "https://b.example/")]
        broken[1].title = None
        with pytest.raises(store.integrity_error):
            await store_.store_page(page, broken)
        assert await store_.items(query_id) == [] and await store_.pages(query_id) == []

        stored = await store_.store_page(page, [item(query_id, 1, "https://a.example/")])
        assert stored == 1 and len(await store_.pages(query_id)) == 1

    store.run(work)


def test_page_number_is_required(store):
    async def work(backends):
        query_id = await backends.store.start_query(record())
        page = PageRecord(
            query_id=query_id, source="mojeek", page_number=1, outcome="ok", results=1
        )
        with pytest.raises(store.integrity_error):
            await backends.store.store_page(
                page, [item(query_id, 1, "https://a.", page_number=None)]
            )

    store.run(work)


def test_a_url_already_stored_for_the_query_is_skipped_and_not_counted(store):
    async def work(backends):
        query_id = await backends.store.start_query(record())
        first = PageRecord(query_id, "mojeek", 1, "ok", 2)
        second = PageRecord(query_id, "mojeek", 2, "ok", 2)
        a, b, c = "https://a.example/", "https://b.example/", "https://c.example/"
        return (
            await backends.store.store_page(first, [item(query_id, 1, a), item(query_id, 2, b)]),
            await backends.store.store_page(
                second, [item(query_id, 3, b, page_number=2), item(query_id, 4, c, page_number=2)]
            ),
            [(p.page_number, p.items_stored) for p in await backends.store.pages(query_id)],
            [i.normalized_url for i in await backends.store.items(query_id)],
        )

    stored_first, stored_second, pages, urls = store.run(work)

    assert (stored_first, stored_second) == (2, 1)
    assert pages == [(1, 2), (2, 1)]
    assert urls == ["https://a.example/", "https://b.example/", "https://c.example/"]


def test_the_item_columns_are_the_stored_items_fields(store):
    async def work(backends):
        query_id = await backends.store.start_query(record())
        full = item(
            query_id,
            1,
            "https://a.example/",
            kind="api",
            doi="10.1/x",
            authors=("Ada Lovelace", "Charles Babbage"),
            year=1843,
            venue="Notes",
            abstract="On the engine.",
            source_id="W1",
            relevance=0.5,
        )
        await backends.store.store_page(PageRecord(query_id, "mojeek", 1, "ok", 1), [full])
        return full, await backends.store.items(query_id)

    written, (stored,) = store.run(work)

    assert tuple(field.name for field in fields(StoredItem)) == ITEM_COLUMNS
    for field in fields(ResultItem):
        assert getattr(stored, field.name) == getattr(written, field.name), field.name
    assert INSTANT.fullmatch(stored.fetched_at)


LONG_AGO = "2001-01-01T00:00:00+00:00"


@pytest.mark.subprocess
def test_a_dead_crawls_running_query_is_interrupted_when_the_store_opens_again(store):
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()

    async def start(backends):
        query_id = await backends.store.start_query(record())
        await backends.store.reopen_query(query_id)  # running in this (live) process
        other = await backends.store.start_query(record(query_text="y", normalized_query="y"))
        return query_id, other

    live, other = store.run(start)
    # The second query's crawl is this test's process: make it another, gone, process's.
    if store.name == "sqlite":
        with sqlite3.connect(Path(store.settings["LYRA_DB_URL"][len("sqlite:///") :])) as conn:
            conn.execute("UPDATE queries SET pid = ? WHERE id = ?", (gone.pid, other))
    else:
        with psycopg.connect(store.settings["LYRA_DB_URL"]) as conn:
            conn.execute("UPDATE queries SET pid = %s WHERE id = %s", (gone.pid, other))

    async def statuses(backends):
        return [(await backends.store.query(i)).status for i in (live, other)]

    assert store.run(statuses) == ["running", "interrupted"]


def test_a_running_query_whose_pid_a_later_process_took_is_interrupted_on_open(store):
    async def start(backends):
        query_id = await backends.store.start_query(record())
        await backends.store.reopen_query(query_id)  # running in this (live) process
        other = await backends.store.start_query(record(query_text="y", normalized_query="y"))
        return query_id, other

    live, other = store.run(start)
    # The second query's crawl started long before this process: its pid was taken again.
    if store.name == "sqlite":
        with sqlite3.connect(Path(store.settings["LYRA_DB_URL"][len("sqlite:///") :])) as conn:
            conn.execute("UPDATE queries SET started_at = ? WHERE id = ?", (LONG_AGO, other))
    else:
        with psycopg.connect(store.settings["LYRA_DB_URL"]) as conn:
            conn.execute("UPDATE queries SET started_at = %s WHERE id = %s", (LONG_AGO, other))

    async def statuses(backends):
        return [(await backends.store.query(i)).status for i in (live, other)]

    assert store.run(statuses) == ["running", "interrupted"]


def test_the_store_plays_every_role_and_a_role_only_what_it_names(store):
    async def roles(backends):
        return [role for role in ROLES if isinstance(backends.store, role)]

    assert store.run(roles) == list(ROLES)
    every = [name for role in ROLES for name in vars(role) if not name.startswith("_")]
    assert len(every) == len(set(every)), "each method belongs to one role"


# -- the same calls on both backends give the same records ----------------------------------


def test_an_engine_is_stale_from_its_first_layout_changed_page_after_its_last_page_read(store):
    async def work(backends):
        store_ = backends.store
        query_id = await store_.start_query(record())

        async def page(number: int, outcome: str, source: str = "mojeek") -> None:
            await store_.store_page(PageRecord(query_id, source, number, outcome, 0), [])

        await page(1, "layout_changed")  # read again by page 2: no longer stale
        await page(2, "ok")
        await page(3, "layout_changed")
        await page(4, "captcha")  # a block says nothing of the parser
        await page(5, "layout_changed")
        await page(1, "layout_changed", source="bing")
        await page(1, "ok", source="brave")
        stored = {(p.source, p.page_number): p.fetched_at for p in await store_.pages(query_id)}

        stale = await store_.stale_parsers()

        assert [(s.engine, s.pages, s.query_id, s.page_number) for s in stale] == [
            ("bing", 1, query_id, 1),
            ("mojeek", 2, query_id, 5),
        ]
        assert stale[1].since == stored[("mojeek", 3)]
        assert stale[1].fetched_at == stored[("mojeek", 5)]
        await page(6, "empty")  # the engine's no-results page, read: the parser reads pages
        assert [s.engine for s in await store_.stale_parsers()] == ["bing"]

    store.run(work)


def paper(key: int, **values: Any) -> CanonicalPaper:
    base: dict[str, Any] = {
        "key": key,
        "records": [PaperRecord(source="openalex", title="T", source_id=f"W{key}")],
        "doi": None,
        "arxiv_id": None,
        "pmid": None,
        "title": "T",
        "normalized_title": "t",
        "year": 2020,
        "authors": ("A. Author",),
        "venue": None,
        "abstract": None,
        "sources": {"openalex"},
        "attribution": "api_only",
    }
    return CanonicalPaper(**{**base, **values})


def test_a_result_at_the_url_of_another_querys_paper_is_that_paper(store):
    # One paper is one row across queries: a web result without an identifier, at the URL of
    # a paper another query's API record gave, is linked to that paper; a URL two papers have
    # stays unlinked, as does one no paper has.
    async def work(backends):
        store_ = backends.store
        first = await store_.start_query(record(task_id="t"))
        await store_.store_page(
            PageRecord(first, "openalex", 1, "ok", 3),
            [
                item(first, rank, url, source="openalex", kind="api")
                for rank, url in enumerate(("https://a/", "https://w/", "https://v/"), 1)
            ],
        )
        await store_.save_papers(
            first,
            [
                (paper(1, doi="10.1234/a"), ["https://a/"]),
                (paper(2, doi="10.1234/w"), ["https://w/"]),
            ],
            {},
            {"api_only": 2},
            min_abstract_chars=10,
        )
        other = await store_.start_query(record(task_id="t"))
        await store_.store_page(
            PageRecord(other, "openalex", 1, "ok", 1),
            [item(other, 1, "https://w/", source="openalex", kind="api")],
        )
        await store_.save_papers(
            other,
            [(paper(3, doi="10.1234/x"), ["https://w/"])],
            {},
            {"api_only": 1},
            min_abstract_chars=10,
        )
        second = await store_.start_query(record(task_id="t", engine="duckduckgo"))
        await store_.store_page(
            PageRecord(second, "duckduckgo", 1, "ok", 3),
            [
                item(second, rank, url, source="duckduckgo")
                for rank, url in enumerate(("https://a/", "https://w/", "https://n/"), 1)
            ],
        )
        counts = await store_.save_papers(
            second, [], {}, {"both": 0, "api_only": 0, "serp_only": 0}, min_abstract_chars=10
        )
        return (
            counts,
            await store_.items(first),
            await store_.items(second),
            await store_.papers_of(second),
            await store_.query(second),
        )

    counts, first_items, second_items, papers, second = store.run(work)

    assert counts == {"both": 0, "api_only": 0, "serp_only": 1}
    paper_at = {i.normalized_url: i.paper_id for i in first_items}
    assert {i.normalized_url: i.paper_id for i in second_items} == {
        "https://a/": paper_at["https://a/"],
        "https://w/": None,
        "https://n/": None,
    }
    (found,) = papers
    assert (found.doi, found.attribution) == ("10.1234/a", "both")
    assert found.sources == ("duckduckgo", "openalex")
    assert second.attribution == {"both": 0, "api_only": 0, "serp_only": 1}


DISTINCT_TITLES = (
    "Tidal marsh accretion rates",
    "Hydrology of coastal salt flats",
    "Mangrove carbon burial",
    "Dune erosion under winter storms",
    "Estuarine sediment budgets",
)


def numbered(key: int, number: str) -> CanonicalPaper:
    """Paper `number` (its DOI 10.1/`number`) as a query's paper `key`."""
    title = DISTINCT_TITLES[int(number)]
    return paper(
        key,
        doi=f"10.1/{number}",
        title=title,
        normalized_title=title.lower(),
        records=[
            PaperRecord(
                source="openalex", title=title, source_id=f"W{number}", doi=f"10.1/{number}"
            )
        ],
    )


def test_papers_found_are_read_a_page_at_a_time_with_the_queries_that_found_them(store):
    # A task's papers, by id, each once, with the texts of the task's queries that found it
    # (not another task's) and its best rank among their results: the fused rank when the
    # query's close gave one, else the rank in its source.
    async def work(backends):
        store_ = backends.store
        batch = await store_.create_batch(
            source="b.yaml", content_hash="h", entries=[EntrySpec(1, "salt", {"query": "salt"})]
        )
        (entry,) = await store_.take_entries(batch.id, 1, owner="o", lease_s=60)
        marsh = await store_.start_query(record(query_text="tidal marsh", task_id="t"))
        salt = await store_.start_query(
            record(query_text="salt", task_id="t", batch_entry_id=entry.id)
        )
        elsewhere = await store_.start_query(record(query_text="other", task_id="u"))
        urls = [f"https://p/{n}" for n in range(5)]
        for query_id, taken, fused in (
            (marsh, urls[:3], {urls[0]: 4, urls[1]: 2}),
            (salt, urls[1:4], {}),
            (elsewhere, urls[3:], {}),
        ):
            await store_.store_page(
                PageRecord(query_id, "openalex", 1, "ok", len(taken)),
                [item(query_id, rank, url, kind="api") for rank, url in enumerate(taken, 3)],
            )
            await store_.save_papers(
                query_id,
                [(numbered(n, url[-1]), [url]) for n, url in enumerate(taken)],
                fused,
                {"api_only": len(taken)},
                min_abstract_chars=10,
            )
        pages, after = [], 0
        while page := await store_.papers_found(task_id="t", after_id=after, limit=2):
            pages.append(page)
            after = page[-1].paper.id
        return (
            pages,
            await store_.papers_found(batch_id=batch.id, limit=10),
            await store_.papers_found(query_id=elsewhere, limit=10),
            await store_.papers_found(task_id="none", limit=10),
        )

    pages, of_batch, of_query, of_nothing = store.run(work)

    assert [len(page) for page in pages] == [2, 2]
    found = [f for page in pages for f in page]
    assert [f.paper.doi for f in found] == [f"10.1/{n}" for n in range(4)]
    assert [f.paper.id for f in found] == sorted(f.paper.id for f in found)
    assert [(f.queries, f.first_rank) for f in found] == [
        (("tidal marsh",), 4),
        (("tidal marsh", "salt"), 2),
        (("tidal marsh", "salt"), 4),
        (("salt",), 5),
    ]
    assert [(f.paper.doi, f.queries, f.first_rank) for f in of_batch] == [
        ("10.1/1", ("salt",), 3),
        ("10.1/2", ("salt",), 4),
        ("10.1/3", ("salt",), 5),
    ]
    assert [(f.paper.doi, f.queries) for f in of_query] == [
        ("10.1/3", ("other",)),
        ("10.1/4", ("other",)),
    ]
    assert of_nothing == []


async def every_call(backends: Backends) -> list[tuple[str, Any]]:
    """A crawl's life, two queries and a batch of three entries, through every read and write
    of the protocol; each answer named by its call."""
    store = backends.store
    seen: list[tuple[str, Any]] = []

    def see(name: str, value: Any) -> Any:
        seen.append((name, value))
        return value

    batch = see(
        "create_batch",
        await store.create_batch(
            source="b.yaml",
            content_hash="h1",
            entries=[
                EntrySpec(1, "tidal marsh", {"query": "tidal marsh", "serp_max_pages": "2"}),
                EntrySpec(2, "salt", {"query": "salt"}),
                EntrySpec(3, "bad", {}, rejected="entry 3: no query"),
            ],
        ),
    )
    see("batch", await store.batch(batch.id))
    see("batch_by_hash", await store.batch_by_hash("h1"))
    see("batch_by_hash none", await store.batch_by_hash("nope"))
    entries = see("take_entries", await store.take_entries(batch.id, 2, owner="o", lease_s=60))
    first = see(
        "start_query",
        await store.start_query(
            record(
                query_text="tidal marsh",
                normalized_query="tidal marsh",
                task_id="t1",
                selection={"rule": "last_mile", "harvest": 0.95, "engines": ["a", "b"]},
                batch_entry_id=entries[0].id,
                job_id="job-1",
                time_range="y",
            )
        ),
    )
    see("query started", await store.query(first))
    page_one = PageRecord(first, "mojeek", 1, "ok", 3, url="https://m/?q=1", novelty_rate=1.0)
    see(
        "store_page 1",
        await store.store_page(
            page_one,
            [
                item(first, 1, "https://a/", relevance=0.9, doi="10.1/a", authors=("X", "Y")),
                item(first, 2, "https://b/", relevance=0.2, snippet="s"),
                item(first, 3, "https://c/", relevance=None, kind="api", year=2001),
            ],
        ),
    )
    page_two = PageRecord(first, "mojeek", 2, "ok", 2, harvest_rate=0.5)
    see(
        "store_page 2",
        await store.store_page(
            page_two,
            [
                item(first, 4, "https://a/", page_number=2),
                item(first, 5, "https://d/", page_number=2, relevance=0.7),
            ],
        ),
    )
    api_page = PageRecord(first, "openalex", 1, "ok", 1)
    see(
        "store_page api",
        await store.store_page(
            api_page, [item(first, 1, "https://e/", source="openalex", kind="api")]
        ),
    )
    see("store_page empty", await store.store_page(PageRecord(first, "mojeek", 3, "empty", 0), []))
    await store.store_page(PageRecord(first, "openalex", 2, "layout_changed", 0), [])
    see("stale_parsers", await store.stale_parsers())
    see("pages", await store.pages(first))
    see("items", await store.items(first))
    await store.save_papers(
        first,
        [
            (paper(1, doi="10.1/a", sources={"mojeek", "openalex"}), ["https://a/"]),
            (paper(2, arxiv_id="2101.1", attribution="serp_only"), ["https://b/", "https://d/"]),
        ],
        {"https://a/": 1, "https://b/": 2, "https://d/": 3},
        {"both": 0, "api_only": 1, "serp_only": 1},
        min_abstract_chars=10,
    )
    see("papers_of", await store.papers_of(first))
    see("attribution_counts", await store.attribution_counts(first))
    queued = see("papers_to_read", await store.papers_to_read(task_id="t1"))
    blocked = LandingPage(queued[0].paper_id, queued[0].fetch_url, "blocked", "HTTP 403", 403)
    await store.record_landing_page(blocked, None)
    see("papers_to_read after a block", await store.papers_to_read(query_id=first))
    read = replace(blocked, outcome="abstract", detail="", http_status=200, metadata_field="x")
    await store.record_landing_page(read, "An abstract read from the paper's landing page.")
    see("landing_pages", await store.landing_pages(query_id=first))
    intervention = see(
        "add_intervention",
        await store.add_intervention(
            engine="mojeek", url="https://m/?q=2", query_id=first, kind="captcha", detail=""
        ),
    )
    see("open_interventions", await store.open_interventions())
    see("resolve_intervention", await store.resolve_intervention(intervention))
    see("resolve_intervention again", await store.resolve_intervention(intervention))
    await store.add_intervention(
        engine="mojeek", url="https://m/?q=3", query_id=first, kind="rate_limited", detail="429"
    )
    see(
        "finish_query",
        await store.finish_query(
            first,
            status="finished",
            stop_reasons={"mojeek": "empty_page", "openalex": "max_pages"},
            errors={},
            relevance_threshold=0.5,
            entry_state="done",
        ),
    )
    now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    await store.store_cache_entry("k", first, created_at=now, expires_at=now + timedelta(hours=1))
    see("fresh_cache_entry", await store.fresh_cache_entry("k", now))
    see("fresh_cache_entry expired", await store.fresh_cache_entry("k", now + timedelta(hours=2)))
    second = await store.start_query(
        record(
            query_text="tidal marsh",
            normalized_query="tidal marsh",
            task_id="t1",
            batch_entry_id=entries[1].id,
        )
    )
    await store.store_page(
        PageRecord(second, "mojeek", 1, "ok", 2),
        [item(second, 1, "https://a/"), item(second, 2, "https://z/")],
    )
    see("earlier_urls", await store.earlier_urls(second))
    see("repeated_url_count", await store.repeated_url_count(second))
    await store.mark_cache_hit(second, first)
    await store.copy_paper_links(first, second)
    see("items copied", await store.items(second))
    # A paper found again by its DOI: the stored row is merged with it.
    again = paper(
        3,
        doi="10.1/a",
        records=[PaperRecord(source="crossref", title="T", source_id="C1")],
        abstract="A longer abstract.",
        venue="V",
        sources={"crossref"},
        attribution="serp_only",
    )
    await store.save_papers(
        second, [(again, ["https://a/"])], {"https://a/": 1}, {"both": 1}, min_abstract_chars=10
    )
    see("papers_of merged", await store.papers_of(second))
    cited = paper(3, doi="10.1/c", abstract="x" * 20, sources={"semantic_scholar"})
    listed = CitationFetch(first, (await store.papers_of(first))[0].id, "openalex", "citations", 1)
    see(
        "store_citation_page",
        await store.store_citation_page(replace(listed, links=1), [cited], min_abstract_chars=10),
    )
    await store.end_citation_fetches([replace(listed, status="done")])
    see("citation_fetches", await store.citation_fetches(first))
    see("citation_seeds", await store.citation_seeds(first, limit=2))
    see("citation_frontier", await store.citation_frontier(first, 1, limit=2))
    see("task_citation_graph", await store.task_citation_graph("t1"))
    see("papers_found task", await store.papers_found(task_id="t1", limit=10))
    see("papers_found page", await store.papers_found(query_id=second, after_id=1, limit=1))
    see("papers_found batch", await store.papers_found(batch_id=batch.id, limit=10))
    chosen = (await store.papers_of(first))[0].id
    audit = SelectionRecord(
        question="q",
        conversation=None,
        search_text="q",
        facets_named=(),
        facets_carried=("source=openalex",),
        facet_note="",
        documents_kept=1,
        documents_total=2,
        stages=(StageRun("keyword", True, "1 document", "bm25s"),),
        candidates=(
            CandidateRecord(
                f"paper:{chosen}", 0, StageScores(keyword=1.5, fused_rank=1), 1, chosen
            ),
            CandidateRecord("result:https://b/", 1, StageScores(semantic=0.25), None),
        ),
        reason="",
        corpus=SelectionCorpus(task_id="t1"),
        corpus_version="v",
        selected_at="2026-01-02T03:04:05.678+00:00",
    )
    selection_id = see("record_selection", await store.record_selection(audit))
    see("selection", await store.selection(selection_id))
    see("papers_found selection", await store.papers_found(selection_id=selection_id, limit=10))
    marsh = record(query_text="tidal marsh", normalized_query="tidal marsh")
    # One finished, one running: nothing to resume yet.
    assert await store.resumable_query(marsh, any_engine=True) is None
    await store.finish_query(
        second,
        status="cancelled",
        stop_reasons={"mojeek": "cancelled"},
        errors={},
        relevance_threshold=None,
    )
    resumable = see(
        "resumable_query",
        await store.resumable_query(marsh, any_engine=True),
    )
    assert resumable is not None and resumable.id == second
    see("query", await store.query(second))
    see("query_ids task", await store.query_ids(task_id="t1"))
    see("query_ids last", await store.query_ids(last=1))
    see("query_ids all", await store.query_ids())
    see("query_for_job", await store.query_for_job("job-1"))
    see("task_harvest_rate", await store.task_harvest_rate("t1"))
    see("task_engines", await store.task_engines("t1"))
    await store.finish_entry(entries[1].id, state="failed", query_id=second, detail="timeout")
    see("batch_entries", await store.batch_entries(batch.id))
    await store.record_rate_waits(batch.id, "host:1", {"mojeek": 2})
    see("batch_progress", await store.batch_progress(batch.id))
    see("batch_stop_reasons", await store.batch_stop_reasons(batch.id))
    see("batch_blocks", await store.batch_blocks(batch.id))
    see("batch_requests_over_time", await store.batch_requests_over_time(batch.id, 3600))
    see("batch_depth_rates", await store.batch_depth_rates(batch.id))
    see("batch_query_ids", await store.batch_query_ids(batch.id))
    see("batch_entries_in", await store.batch_entries_in(batch.id, ["done", "failed"], limit=1))
    return seen


def without_instants(value: Any) -> Any:
    """`value` with every timestamp (checked to be of the records' form) made "<instant>" and
    every time bucket made 0: the two runs happen at different moments."""
    if isinstance(value, str) and INSTANT.fullmatch(value):
        return "<instant>"
    if is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: without_instants(getattr(value, f.name)) for f in fields(value)}
        if type(value).__name__ == "RequestBucket":
            changed["start"] = 0
        return replace(value, **changed)
    if isinstance(value, dict):
        return {k: without_instants(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(without_instants(v) for v in value)
    return value


def test_the_same_calls_give_the_same_records_on_both_backends(tmp_path, postgres_url):
    on_sqlite = sqlite_store(tmp_path).run(every_call)
    on_postgres = postgres_store(postgres_url, tmp_path).run(every_call)

    assert [name for name, _ in on_postgres] == [name for name, _ in on_sqlite]
    for (name, sqlite_value), (_, postgres_value) in zip(on_sqlite, on_postgres, strict=True):
        assert without_instants(postgres_value) == without_instants(sqlite_value), name
    # Timestamps are of the records' one form on both.
    started = dict(on_postgres)["query started"].started_at
    assert INSTANT.fullmatch(started), started


def test_a_save_reads_again_what_another_process_wrote_while_it_waited_for_the_lock(store):
    # A save reads and matches a query's papers ahead of its transaction, outside the lock
    # every save takes. An abstract another process reads from the paper's landing page
    # meanwhile is kept: that write moves the paper index's generation on, so the save reads
    # the paper again in its transaction (else it wrote the row as it read it: no abstract).
    abstract = "An abstract read from the paper's landing page by another process."
    other = (
        FileLockHolder(sqlite_path(store.settings["LYRA_DB_URL"]))
        if store.name == "sqlite"
        else PapersLockHolder(store.settings["LYRA_DB_URL"])
    )

    async def work(backends: Backends) -> tuple[StoredPaper, int]:
        # One query's paper saved; a second query's save of it reads ahead, then waits for the
        # other process, which writes the abstract meanwhile.
        papers = backends.store
        first, second = [await papers.start_query(record(task_id="t")) for _ in range(2)]
        for query_id, source in ((first, "openalex"), (second, "semantic_scholar")):
            await store_the_result(papers, query_id, source)
        await save_the_paper(papers, first, "openalex")
        (queued,) = await papers.papers_to_read(task_id="t")
        with other:
            saving = asyncio.ensure_future(save_the_paper(papers, second, "semantic_scholar"))
            await other.waited_for()  # it read ahead, then waited
            await other.write_abstract(queued.paper_id, abstract)
        await saving
        (stored,) = await papers.papers_of(second)
        before = other.generation()
        await papers.record_landing_page(
            LandingPage(queued.paper_id, queued.fetch_url, "abstract", "", 200, "x"), abstract
        )
        return stored, other.generation() - before

    stored, moved_on = store.run(work)

    assert stored.abstract == abstract
    assert stored.evidence == "abstract"
    assert stored.sources == ("openalex", "semantic_scholar")
    assert moved_on == 1, "an abstract from a landing page moves the generation on"


async def store_the_result(store: Any, query_id: int, source: str) -> None:
    """The page of `source` for the query with one API result, at https://a/."""
    await store.store_page(
        PageRecord(query_id, source, 1, "ok", 1),
        [item(query_id, 1, "https://a/", source=source, kind="api")],
    )


async def save_the_paper(store: Any, query_id: int, source: str) -> None:
    """The query's one paper (DOI 10.1234/a, at https://a/), as `source` found it, saved."""
    await store.save_papers(
        query_id,
        [(paper(query_id, doi="10.1234/a", sources={source}), ["https://a/"])],
        {},
        {"api_only": 1},
        min_abstract_chars=10,
    )
