"""Unified sources: the SERP engine and the scholarly APIs in one crawl, merged into papers."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest_twisted

from lyra_crawl.papers.evidence import FETCH_KINDS
from lyra_crawl.settings import USER_AGENT
from tests.conftest import edited_config, query_db, run_crawl

ALL_SOURCES = "serp,semantic_scholar,openalex"
DEEP = ("--results-total", "300")


def sim_number(title: str) -> int:
    """The simulator's result number, which ends every title it serves (before any suffix)."""
    return int(re.findall(r"\d+", title)[-1])


def the_query(db_path):
    (row,) = query_db(db_path, "SELECT * FROM queries")
    return row


@pytest_twisted.ensureDeferred
async def test_one_crawl_stores_serp_items_and_api_papers_merged(start_simulator, db_path):
    simulator = start_simulator(*DEEP)
    await run_crawl(
        simulator,
        db_path,
        query="soil carbon",
        engine="mojeek",
        serp_max_pages=2,
        sources=ALL_SOURCES,
        strategy="fixed",
    )

    query = the_query(db_path)
    assert query["status"] == "finished"
    assert json.loads(query["stop_reason"]) == {
        "mojeek": "max_pages",
        "semantic_scholar": "max_pages",
        "openalex": "max_pages",
    }
    per_source = {
        row["source"]: row["n"]
        for row in query_db(db_path, "SELECT source, COUNT(*) AS n FROM serp_items GROUP BY source")
    }
    assert set(per_source) == {"mojeek", "semantic_scholar", "openalex"}
    pages = query_db(
        db_path, "SELECT source, page_number FROM serp_pages ORDER BY source, page_number"
    )
    assert {(p["source"], p["page_number"]) for p in pages} == {
        (s, n) for s in ("mojeek", "semantic_scholar", "openalex") for n in (1, 2)
    }
    attribution = json.loads(query["attribution"])
    # Mojeek's results are papers the APIs list too, by their DOI link (every fifth) or at
    # the same publisher page: merged, `both`.
    assert attribution["both"] >= 4 and attribution["api_only"] > 0
    both = query_db(db_path, "SELECT * FROM papers WHERE attribution = 'both'")
    assert all("mojeek" in p["sources"] and len(json.loads(p["sources"])) > 1 for p in both)
    assert any(p["doi"] for p in both) and any(p["doi"] is None for p in both)
    assert all(p["year"] and json.loads(p["authors"]) for p in both), "API metadata kept"
    linked = query_db(
        db_path,
        "SELECT COUNT(DISTINCT source) AS sources FROM serp_items WHERE paper_id = ?",
        (both[0]["id"],),
    )
    assert linked[0]["sources"] >= 1
    dois = query_db(db_path, "SELECT doi FROM papers WHERE doi IS NOT NULL")
    assert len(dois) == len({row["doi"] for row in dois}), "one paper per DOI"


@pytest_twisted.ensureDeferred
async def test_a_preprint_and_its_journal_version_are_one_paper(start_simulator, db_path):
    simulator = start_simulator(*DEEP)
    await run_crawl(
        simulator,
        db_path,
        query="ocean heat",
        sources="semantic_scholar,openalex",
        serp_max_pages=1,
    )

    # The query's own papers (the citation graph adds papers it did not find).
    papers = query_db(
        db_path,
        "SELECT * FROM papers WHERE arxiv_id IS NOT NULL"
        " AND id IN (SELECT paper_id FROM serp_items)",
    )
    # OpenAlex's page of 100 works holds fewer papers than Semantic Scholar's 100 records: its
    # preprints take slots of their own.
    listed = {
        sim_number(row["title"])
        for row in query_db(db_path, "SELECT title FROM serp_items WHERE source = 'openalex'")
    }
    assert papers, "the simulator serves preprint/journal pairs"
    for paper in papers:
        assert paper["doi"] and not paper["doi"].startswith("10.48550/")
        if sim_number(paper["title"]) in listed:
            assert {"semantic_scholar", "openalex"} <= set(json.loads(paper["sources"]))
    assert any(sim_number(paper["title"]) in listed for paper in papers)


@pytest_twisted.ensureDeferred
async def test_every_item_gets_a_fused_rank_across_sources(start_simulator, db_path):
    simulator = start_simulator(*DEEP)
    await run_crawl(
        simulator,
        db_path,
        query="peat bogs",
        engine="mojeek",
        serp_max_pages=1,
        sources=ALL_SOURCES,
    )

    rows = query_db(db_path, "SELECT source, rank, fused_rank, paper_id FROM serp_items")
    assert rows and all(row["fused_rank"] for row in rows)
    best = min(rows, key=lambda row: row["fused_rank"])
    assert best["fused_rank"] == 1
    # A paper every source lists near the top outranks any single source's own top result.
    assert best["paper_id"] is not None


@pytest_twisted.ensureDeferred
async def test_a_failing_source_leaves_the_others_intact(start_simulator, db_path):
    simulator = start_simulator(*DEEP, "--status-at", "openalex:2:500")
    crawler = await run_crawl(
        simulator,
        db_path,
        query="mangrove loss",
        engine="mojeek",
        serp_max_pages=3,
        sources=ALL_SOURCES,
        strategy="fixed",
        expect_errors=True,
    )

    query = the_query(db_path)
    assert query["status"] == "finished"
    stops = json.loads(query["stop_reason"])
    assert stops == {"mojeek": "max_pages", "semantic_scholar": "max_pages", "openalex": "error"}
    assert "HTTP 500" in json.loads(query["errors"])["openalex"]
    pages = query_db(db_path, "SELECT source, page_number, outcome FROM serp_pages")
    openalex = sorted((p["page_number"], p["outcome"]) for p in pages if p["source"] == "openalex")
    assert openalex == [(1, "ok"), (2, "error")], "page 1 kept, the failed page on record"
    for source in ("mojeek", "semantic_scholar"):
        assert sorted(p["page_number"] for p in pages if p["source"] == source) == [1, 2, 3]
    assert crawler.stats.get_value("lyra/openalex/outcome/error") == 1


@pytest_twisted.ensureDeferred
async def test_keys_travel_as_configured_and_never_into_storage(start_simulator, db_path):
    simulator = start_simulator(*DEEP)
    settings = {
        "LYRA_S2_API_KEY": "s2-secret",
        "LYRA_OPENALEX_API_KEY": "oa-secret",
        "LYRA_CONTACT_EMAIL": "lab@example.org",
    }
    await run_crawl(
        simulator,
        db_path,
        settings,
        query="kelp",
        sources="semantic_scholar,openalex",
        serp_max_pages=1,
        citation_depth=1,
    )

    # The search pages and the citation graph's requests (its lists, works and lookups) alike.
    s2, openalex = simulator.requests("semantic_scholar"), simulator.requests("openalex")
    assert len(s2) > 1 and len(openalex) > 1
    for request in s2:
        assert request["headers"] == {"x-api-key": "s2-secret"}
        assert "s2-secret" not in json.dumps(request["params"])
    for request in openalex:
        assert request["params"]["api_key"] == "oa-secret"
        assert request["params"]["mailto"] == "lab@example.org"
    stored = json.dumps(
        [dict(r) for r in query_db(db_path, "SELECT url FROM serp_pages")]
        + [dict(r) for r in query_db(db_path, "SELECT * FROM citation_fetches")]
    )
    assert "secret" not in stored and "mailto" in stored


@pytest_twisted.ensureDeferred
async def test_apis_that_ask_tools_to_say_who_they_are_hear_lyras_user_agent(simulator, db_path):
    contact = {"LYRA_CONTACT_EMAIL": "lab@example.org"}
    await run_crawl(
        simulator, db_path, contact, query="kelp", engine="wikipedia", sources="serp,crossref"
    )
    await run_crawl(simulator, db_path, contact, query="kelp", engine="mojeek")

    for engine in ("wikipedia", "crossref"):
        agents = {request["user_agent"] for request in simulator.requests(engine)}
        assert agents == {"lyra_crawl (+mailto:lab@example.org)"}, engine
    # Results pages of search engines are asked for as a browser asks.
    assert {request["user_agent"] for request in simulator.requests("mojeek")} == {USER_AGENT}


@pytest_twisted.ensureDeferred
async def test_without_keys_nothing_secret_is_sent(start_simulator, db_path):
    simulator = start_simulator(*DEEP)
    await run_crawl(
        simulator, db_path, query="kelp", sources="semantic_scholar,openalex", serp_max_pages=1
    )

    assert all(r["headers"] == {} for r in simulator.requests("semantic_scholar"))
    assert all("api_key" not in r["params"] for r in simulator.requests("openalex"))


@pytest_twisted.ensureDeferred
async def test_a_cached_search_keeps_its_papers(start_simulator, db_path):
    simulator = start_simulator(*DEEP)
    args = {"query": "fen", "engine": "mojeek", "serp_max_pages": 1, "sources": ALL_SOURCES}
    await run_crawl(simulator, db_path, **args)
    await run_crawl(simulator, db_path, **args)

    first, second = query_db(db_path, "SELECT * FROM queries ORDER BY id")
    assert second["cache_hit"] == 1 and second["attribution"] == first["attribution"]
    links = query_db(
        db_path,
        "SELECT query_id, normalized_url, paper_id, fused_rank FROM serp_items"
        " ORDER BY normalized_url",
    )
    by_query = {
        q: [
            (r["normalized_url"], r["paper_id"], r["fused_rank"])
            for r in links
            if r["query_id"] == q
        ]
        for q in (1, 2)
    }
    assert by_query[1] == by_query[2]


@pytest_twisted.ensureDeferred
async def test_every_paper_of_a_unified_crawl_is_read_from_its_abstract_or_fetched(
    start_simulator, db_path, tmp_path
):
    # The simulator's abstracts are 300 to 360 characters long: some reach this, some do not.
    config = edited_config(
        tmp_path / "config", lambda p: p["papers"].update(min_abstract_chars=330)
    )
    simulator = start_simulator(*DEEP)
    await run_crawl(
        simulator,
        db_path,
        {"LYRA_CONFIG_DIR": str(config)},
        query="soil carbon",
        engine="mojeek",
        serp_max_pages=1,
        # Publishers withhold every fourth abstract; Crossref gives one for every third paper.
        sources="serp,semantic_scholar,crossref",
    )

    papers = query_db(db_path, "SELECT * FROM papers")
    assert len(papers) > 50
    evidence = Counter(paper["evidence"] for paper in papers)
    assert set(evidence) == {"abstract", "fetch"} and min(evidence.values()) > 5, evidence
    reasons: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for paper in papers:
        length = len(" ".join((paper["abstract"] or "").split()))
        urls = json.loads(paper["fetch_urls"])
        if paper["evidence"] == "abstract":
            assert length >= 330 and paper["fetch_url"] is None and paper["evidence_reason"] is None
            continue
        reason = "abstract shorter than 330 chars" if length else "no abstract"
        assert paper["evidence_reason"] == reason
        reasons[reason] += 1
        # The best kind it has: an open-access PDF Semantic Scholar names, else its arXiv page,
        # DOI link or PubMed page, Semantic Scholar's own paper page (a result) last; a paper
        # only Crossref lists has its DOI link. No source here names a publisher's page.
        kind = next(kind for kind in FETCH_KINDS if kind in urls)
        kinds[kind] += 1
        assert paper["fetch_url"] == urls[kind]
        assert kind != "landing"
        if "semantic_scholar" not in paper["sources"]:
            assert kind == "doi" and paper["fetch_url"].startswith("https://doi.org/10.")
    assert set(reasons) == {"no abstract", "abstract shorter than 330 chars"}, reasons
    assert {"pdf", "arxiv", "doi"} <= set(kinds), kinds
    pdfs = [p for p in papers if p["evidence"] == "fetch" and p["fetch_url"].endswith(".pdf")]
    assert all(p["fetch_url"].startswith("https://repository.sim/pdf/") for p in pdfs)


@pytest_twisted.ensureDeferred
async def test_default_sources_that_cannot_take_a_time_range_are_left_out_and_recorded(
    simulator, db_path, caplog
):
    await run_crawl(
        simulator,
        db_path,
        query="soil carbon",
        engine="duckduckgo",
        time_range="week",
        sources=None,
    )

    query = the_query(db_path)
    assert query["status"] == "finished"
    assert query["sources"] == "serp"
    assert set(json.loads(query["stop_reason"])) == {"duckduckgo"}
    left_out = json.loads(query["selection"])["sources_left_out"]
    assert set(left_out) == {"semantic_scholar", "openalex"}
    assert "does not support time_range 'week'" in left_out["openalex"]
    warned = [r.getMessage() for r in caplog.records if "left out of the default" in r.message]
    assert len(warned) == 2, warned
    assert simulator.requests("semantic_scholar") == simulator.requests("openalex") == []
