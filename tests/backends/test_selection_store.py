"""The SelectionStore role on both store backends, a real SQLite file and a real PostgreSQL:
each selection recorded whole and read back, its candidates following their papers through a
merge, the papers a selection chose read as an export reads a task's, and the documents'
version that tells a cached index of the store that it may be stale."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from lyra_crawl.backends import Backends
from lyra_crawl.papers.canonical import PaperRecord
from lyra_crawl.records import (
    CandidateRecord,
    PageRecord,
    SelectionCorpus,
    SelectionRecord,
    StageRun,
    StageScores,
)
from tests.backends.test_paper_index import api, save_query
from tests.backends.test_store import item, numbered, record

STAGES = (
    StageRun("facets", True, "year=2019.. (named): 3 of 4 documents"),
    StageRun("keyword", True, "3 documents", "bm25s-0.2.14-k1=1.5-b=0.75-english"),
    StageRun("semantic", True, "3 documents", "wordllama-0.3.9-l2_supercat-256"),
    StageRun("fusion", True, "3 candidates"),
    StageRun("cross_encoder", False, "skipped: no cross_encoder.model configured"),
    StageRun("llm", False, "skipped: no LLM configured (LYRA_LLM_URL)"),
    StageRun("final", True, "final = (fused) / 1; top 2"),
)


def audit(paper_ids: list[int | None], **changes: Any) -> SelectionRecord:
    """A selection of task `t` over three candidates, the first two chosen."""
    candidates = tuple(
        CandidateRecord(
            document_id=f"paper:{paper}" if paper else "result:https://a.example/x",
            chunk_index=n % 2,
            scores=StageScores(
                keyword=12.5 - n if n != 1 else None,
                keyword_rank=n + 1 if n != 1 else None,
                keyword_coverage=0.75,
                semantic=0.61 - n / 10,
                semantic_rank=n + 1,
                fused=0.031 - n / 1000,
                fused_rank=n + 1,
                final=1.0 - n / 4,
            ),
            final_rank=n + 1 if n < 2 else None,
            paper_id=paper,
        )
        for n, paper in enumerate(paper_ids)
    )
    base = SelectionRecord(
        question="peat fires since 2019",
        conversation="peat",
        search_text="peat fires",
        facets_named=("year=2019..",),
        facets_carried=(),
        facet_note="",
        documents_kept=3,
        documents_total=4,
        stages=STAGES,
        candidates=candidates,
        reason="",
        corpus=SelectionCorpus(task_id="t"),
        corpus_version="0123456789abcdef",
        selected_at="2026-05-04T03:02:01.123+00:00",
    )
    return replace(base, **changes)


def test_a_selection_is_recorded_whole_and_read_back(store):
    async def work(backends: Backends):
        selections = backends.store
        query_id = await save_query(
            backends, "peat", api(doi="10.1/a", year=2020), api(title="Haze", doi="10.1/b")
        )
        papers = [p.id for p in await selections.papers_of(query_id)]
        first = audit([*papers, None])
        empty = audit(
            [],
            question="quantum chromodynamics",
            conversation=None,
            facets_named=(),
            facets_carried=("year=2019..",),
            facet_note="no document matches year=2019..",
            documents_kept=0,
            reason="the facets keep no document",
            corpus=SelectionCorpus(query_ids=(query_id, 7)),
        )
        on_file = audit([None], corpus=SelectionCorpus(file="/data/corpus.jsonl"))
        ids = [await selections.record_selection(r) for r in (first, empty, on_file)]
        return (
            ids,
            [first, empty, on_file],
            [await selections.selection(i) for i in ids],
            await selections.selection(max(ids) + 1),
        )

    ids, written, read, missing = store.run(work)

    assert len(set(ids)) == 3
    assert read == [replace(r, id=i) for r, i in zip(written, ids, strict=True)]
    assert missing is None
    (chosen_first, chosen_second) = read[0].hits()
    assert (chosen_first.final_rank, chosen_second.final_rank) == (1, 2)
    assert read[0].candidates[1].scores.keyword is None, "a stage that did not score it"
    assert str(read[1].corpus) == f"queries {read[1].corpus.query_ids[0]}, 7"
    assert str(read[2].corpus) == "corpus /data/corpus.jsonl" and not read[2].corpus.in_store


def test_a_candidate_follows_its_paper_into_the_row_a_merge_keeps(store):
    # The preprint and the journal article are two rows until a record with both identifiers
    # makes them one (the smaller id kept): the selection that chose the preprint then names
    # the kept row, and its document id still says what it chose then.
    async def work(backends: Backends):
        selections = backends.store
        journal = await save_query(backends, "journal", api(doi="10.5555/trial.1", year=2021))
        preprint = await save_query(
            backends, "preprint", api(source="arxiv", arxiv_id="1804.01234", year=2018)
        )
        (kept,) = await selections.papers_of(journal)
        (gone,) = await selections.papers_of(preprint)
        chosen = await selections.record_selection(audit([gone.id]))
        await save_query(
            backends,
            "both",
            api(source="semantic_scholar", doi="10.5555/trial.1", arxiv_id="1804.01234"),
        )
        return kept.id, gone.id, await selections.selection(chosen)

    kept, gone, read = store.run(work)

    assert kept < gone
    (candidate,) = read.candidates
    assert (candidate.paper_id, candidate.document_id) == (kept, f"paper:{gone}")


def test_a_candidate_whose_paper_is_gone_is_recorded_without_it(store):
    async def work(backends: Backends):
        selections = backends.store
        chosen = await selections.record_selection(audit([99]))
        return await selections.selection(chosen)

    (candidate,) = store.run(work).candidates
    assert (candidate.paper_id, candidate.document_id) == (None, "paper:99")


def test_the_papers_a_selection_chose_are_found_with_every_query_that_found_them(store):
    async def work(backends: Backends):
        selections = backends.store
        urls = [f"https://p/{n}" for n in range(4)]
        queries = []
        for text, taken in (("tidal marsh", urls[:3]), ("salt", urls[2:])):
            query_id = await selections.start_query(record(query_text=text, task_id="t"))
            await selections.store_page(
                PageRecord(query_id, "openalex", 1, "ok", len(taken)),
                [item(query_id, rank, url, kind="api") for rank, url in enumerate(taken, 1)],
            )
            await selections.save_papers(
                query_id,
                [(numbered(n, url[-1]), [url]) for n, url in enumerate(taken)],
                {},
                {"api_only": len(taken)},
                min_abstract_chars=10,
            )
            queries.append(query_id)
        by_doi = {p.doi: p.id for p in await selections.papers_of(queries[0])}
        by_doi.update({p.doi: p.id for p in await selections.papers_of(queries[1])})
        # Chosen: 10.1/2 (both queries found it) and 10.1/0; 10.1/3 a candidate not chosen.
        chosen = await selections.record_selection(
            audit([by_doi["10.1/2"], by_doi["10.1/0"], by_doi["10.1/3"]])
        )
        return await selections.papers_found(selection_id=chosen, limit=10)

    found = store.run(work)

    assert [(f.paper.doi, f.queries) for f in found] == [
        ("10.1/0", ("tidal marsh",)),
        ("10.1/2", ("tidal marsh", "salt")),
    ]


def test_the_documents_version_moves_whenever_their_documents_may_have_changed(store):
    async def work(backends: Backends):
        selections = backends.store
        first = await save_query(backends, "peat", api(doi="10.1/a"))
        other = await selections.start_query(record(query_text="other", task_id="u"))
        versions = {"start": await selections.documents_version([first])}
        versions["again"] = await selections.documents_version([first])
        # Another query's page adds no document of the first query's.
        await selections.store_page(
            PageRecord(other, "mojeek", 1, "ok", 1), [item(other, 1, "https://o/")]
        )
        versions["other page"] = await selections.documents_version([first])
        versions["both"] = await selections.documents_version([first, other])
        # A save anywhere may have merged one of its papers into another row.
        await save_query(backends, "haze", PaperRecord(source="crossref", title="Haze"))
        versions["a save"] = await selections.documents_version([first])
        await selections.store_page(
            PageRecord(first, "mojeek", 2, "ok", 1), [item(first, 9, "https://new/")]
        )
        versions["a result"] = await selections.documents_version([first])
        versions["none"] = await selections.documents_version([])
        return versions

    versions = store.run(work)

    assert versions["again"] == versions["start"] == versions["other page"]
    assert len({versions[k] for k in ("start", "both", "a save", "a result", "none")}) == 5
