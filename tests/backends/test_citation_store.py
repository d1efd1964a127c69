"""The citation graph in the store, on both backends (a real SQLite file, a real PostgreSQL):
an answer's papers enter the paper index and make one edge each, once; where a graph starts
and goes on; a task's graph; and rows merged later keep their edges."""

from __future__ import annotations

from typing import Any

from lyra_crawl.backends import Backends
from lyra_crawl.papers.canonical import CanonicalPaper, CanonicalPaperIndex, PaperRecord
from lyra_crawl.records import CitationFetch
from tests.backends.test_paper_index import MIN_ABSTRACT, api, save_query, serp

ABSTRACT = "A field study of soil moisture sampling over three seasons. " * 5


def answer(*records: PaperRecord) -> list[CanonicalPaper]:
    """An answer's papers as the crawl hands them over: each record merged in memory first."""
    index = CanonicalPaperIndex()
    index.add_many(records)
    return index.papers()


def fetch(query_id: int, paper_id: int, relation: str = "references", **values: Any):
    return CitationFetch(query_id, paper_id, "semantic_scholar", relation, 1, **values)


async def rows(backends: Backends, task: str = "t1") -> tuple[set[tuple[int, int, str]], list]:
    graph = await backends.store.task_citation_graph(task)
    return {(e.citing, e.cited, e.source) for e in graph.edges}, graph.papers


def test_an_answer_merges_its_papers_into_the_index_and_stores_each_edge_once(store):
    async def work(backends: Backends):
        store_ = backends.store
        query_id = await save_query(
            backends,
            "soil moisture",
            api("Soil moisture sampling", doi="10.5555/a", abstract=ABSTRACT),
            serp("Sampling designs for catchments", doi="10.5555/b"),
        )
        own = {paper.doi: paper.id for paper in await store_.papers_of(query_id)}
        seed = own["10.5555/a"]
        page = answer(
            # The query's own web result, now from an API: that row, still `serp_only`.
            api("Sampling designs for catchments", source="semantic_scholar", doi="10.5555/b"),
            api("Rainfall and runoff", source="semantic_scholar", doi="10.5555/c", year=2001),
            # The seed itself (a preprint of it, say): no edge to itself.
            api("Soil moisture sampling", source="semantic_scholar", doi="10.5555/a"),
        )
        added = await store_.store_citation_page(
            fetch(query_id, seed, links=3), page, min_abstract_chars=MIN_ABSTRACT
        )
        again = await store_.store_citation_page(
            fetch(query_id, seed, links=3), page, min_abstract_chars=MIN_ABSTRACT
        )
        citing = await store_.store_citation_page(
            fetch(query_id, seed, "citations", links=1),
            answer(api("Catchment memory", source="semantic_scholar", doi="10.5555/d")),
            min_abstract_chars=MIN_ABSTRACT,
        )
        await store_.end_citation_fetches(
            [
                fetch(query_id, seed, status="done"),
                fetch(query_id, seed, "citations", status="quota", detail="daily quota spent"),
                fetch(query_id, 999_999, status="done"),  # no such paper: no row
            ]
        )
        edges, papers = await rows(backends)
        return own, (added, again, citing), edges, papers, await store_.citation_fetches(query_id)

    own, added, edges, papers, fetches = store.run(work)

    by_doi = {paper.doi: paper for paper in papers}
    seed, web = own["10.5555/a"], own["10.5555/b"]
    assert added == (2, 0, 1)
    assert edges == {
        (seed, web, "semantic_scholar"),
        (seed, by_doi["10.5555/c"].id, "semantic_scholar"),
        (by_doi["10.5555/d"].id, seed, "semantic_scholar"),
    }
    assert by_doi["10.5555/b"].attribution == "serp_only" and by_doi["10.5555/b"].id == web
    assert by_doi["10.5555/c"].attribution == "api_only" and by_doi["10.5555/c"].year == 2001
    assert [(f.relation, f.status, f.links, f.detail) for f in fetches] == [
        ("citations", "quota", 1, "daily quota spent"),
        ("references", "done", 6, ""),
    ]


def test_a_graph_starts_at_the_best_ranked_abstracts_and_goes_on_to_the_most_linked(store):
    async def work(backends: Backends):
        store_ = backends.store
        query_id = await save_query(
            backends,
            "soil moisture",
            api("No abstract here", doi="10.5555/n"),
            api("Soil moisture sampling", doi="10.5555/a", abstract=ABSTRACT),
            api("Catchment memory", doi="10.5555/m", abstract=ABSTRACT),
        )
        seeds = await store_.citation_seeds(query_id, limit=1)
        seed = seeds[0].id
        reached = answer(
            api(
                "Rainfall and runoff", source="semantic_scholar", doi="10.5555/c", abstract=ABSTRACT
            ),
            api("Drainage", source="semantic_scholar", doi="10.5555/e", abstract=ABSTRACT),
            api("Infiltration", source="semantic_scholar", doi="10.5555/f"),
        )
        await store_.store_citation_page(
            fetch(query_id, seed), reached, min_abstract_chars=MIN_ABSTRACT
        )
        # Drainage is named by a second list too: the most linked.
        await store_.store_citation_page(
            fetch(query_id, seed, "citations"),
            answer(api("Drainage", source="semantic_scholar", doi="10.5555/e")),
            min_abstract_chars=MIN_ABSTRACT,
        )
        frontier = await store_.citation_frontier(query_id, 1, limit=5)
        return (
            seeds,
            [p.doi for p in frontier],
            await store_.citation_frontier(query_id, 2, limit=5),
        )

    seeds, frontier, nothing = store.run(work)

    assert [paper.doi for paper in seeds] == ["10.5555/a"]
    # Infiltration has no abstract; the seed itself and papers no level-1 list named are out.
    assert frontier == ["10.5555/e", "10.5555/c"] and nothing == []


def test_a_tasks_graph_is_its_papers_and_the_edges_its_lists_read(store):
    async def work(backends: Backends):
        store_ = backends.store
        mine = await save_query(
            backends, "soil moisture", api("Soil moisture sampling", doi="10.5555/a")
        )
        theirs = await save_query(
            backends, "runoff", api("Rainfall and runoff", doi="10.5555/c"), task_id="t2"
        )
        (a,), (c,) = await store_.papers_of(mine), await store_.papers_of(theirs)
        await store_.store_citation_page(
            fetch(mine, a.id),
            answer(api("Drainage", source="semantic_scholar", doi="10.5555/e")),
            min_abstract_chars=MIN_ABSTRACT,
        )
        # Another task's list naming this task's paper.
        await store_.store_citation_page(
            fetch(theirs, c.id, "citations"),
            answer(api("Soil moisture sampling", source="semantic_scholar", doi="10.5555/a")),
            min_abstract_chars=MIN_ABSTRACT,
        )
        return a.id, c.id, await rows(backends), await rows(backends, "t2")

    a, c, (edges, papers), (other_edges, other_papers) = store.run(work)

    (drainage,) = [paper.id for paper in papers if paper.doi == "10.5555/e"]
    # a cites c, as the other task's list of c's citations says: one of a's references too.
    assert edges == {(a, drainage, "semantic_scholar"), (a, c, "semantic_scholar")}
    assert {paper.id for paper in papers} == {a, drainage, c}
    assert other_edges == {(a, c, "semantic_scholar")}
    assert {paper.id for paper in other_papers} == {a, c}


def test_rows_merged_later_keep_their_edges_and_lists(store):
    async def work(backends: Backends):
        store_ = backends.store
        query_id = await save_query(
            backends,
            "journal",
            api("Soil moisture sampling", doi="10.5555/a", year=2021, authors=("Ana Silva",)),
        )
        (journal,) = await store_.papers_of(query_id)
        # Its preprint, reached by its references list: a row of its own, years earlier.
        await store_.store_citation_page(
            fetch(query_id, journal.id, links=2),
            answer(
                api("Sampling soil moisture", source="arxiv", arxiv_id="1804.01234", year=2018),
                api("Drainage", source="arxiv", doi="10.5555/e"),
            ),
            min_abstract_chars=MIN_ABSTRACT,
        )
        preprint = next(p for p in (await rows(backends))[1] if p.arxiv_id == "1804.01234")
        await store_.store_citation_page(
            fetch(query_id, preprint.id, links=1),
            answer(api("Drainage", source="arxiv", doi="10.5555/e")),
            min_abstract_chars=MIN_ABSTRACT,
        )
        # A record with both identifiers: the two rows are one paper.
        await save_query(
            backends,
            "both",
            api("Soil moisture sampling", doi="10.5555/a", arxiv_id="1804.01234"),
        )
        edges, papers = await rows(backends)
        return journal.id, preprint.id, edges, papers, await store_.citation_fetches(query_id)

    journal, preprint, edges, papers, fetches = store.run(work)

    drainage = next(paper.id for paper in papers if paper.doi == "10.5555/e")
    assert preprint not in {paper.id for paper in papers}
    # journal -> preprint became journal -> journal and went; both lists' edges are one.
    assert edges == {(journal, drainage, "semantic_scholar")}
    assert [(f.paper_id, f.links) for f in fetches] == [(journal, 2)]
