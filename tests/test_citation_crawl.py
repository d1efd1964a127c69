"""The citation crawl's plan (lyra_crawl.papers.citation_crawl): one request in flight per
source, follow-ups before the next paper, fetches ending done or with the reason a source
stopped, levels."""

from __future__ import annotations

from lyra_crawl.engines.base import PageRequest
from lyra_crawl.engines.citation_links import LinkRequest, LinkStep, Relation
from lyra_crawl.papers.citation_crawl import CitationCrawl, CitationRequest, FetchEnd, FetchKey

REFS, CITS = Relation.REFERENCES, Relation.CITATIONS


def link(name: str, *relations: Relation, step: LinkStep = LinkStep.LIST) -> LinkRequest:
    return LinkRequest(PageRequest(url=f"https://api.example/{name}"), step, relations, room=10)


def s2_seed(paper_id: int, level: int = 1) -> list[CitationRequest]:
    return [
        CitationRequest(paper_id, level, "s2", link(f"{paper_id}/{relation}", relation))
        for relation in (REFS, CITS)
    ]


def oa_seed(paper_id: int, level: int = 1) -> CitationRequest:
    return CitationRequest(
        paper_id, level, "oa", link(f"W{paper_id}", REFS, CITS, step=LinkStep.WORK)
    )


def test_each_source_has_one_request_in_flight_and_follow_ups_go_first() -> None:
    crawl = CitationCrawl(depth=1, top_k=2)
    crawl.start_level([*s2_seed(1), oa_seed(1), *s2_seed(2), oa_seed(2)])

    first = crawl.take()
    assert [(r.source, r.paper_id) for r in first] == [("s2", 1), ("oa", 1)]
    assert crawl.take() == []  # both sources busy

    s2_refs, work = first
    next_page = link("1/references?offset=100", REFS)
    assert crawl.answered(s2_refs, [next_page]) == []  # a page of the list is still due
    (following,) = crawl.take()
    assert following.link is next_page and following.paper_id == 1
    assert crawl.answered(following, []) == [FetchEnd(FetchKey(1, "s2", REFS), 1, "done")]

    # The work leads to a lookup and the citations list: the paper's requests before paper 2's.
    lookup, cites = link("lookup", REFS, step=LinkStep.LOOKUP), link("cites", CITS)
    assert crawl.answered(work, [lookup, cites]) == []
    assert [r.link for r in crawl.take() if r.source == "oa"] == [lookup]


def test_a_work_nobody_cites_ends_its_citations_list_done_on_its_answer() -> None:
    crawl = CitationCrawl(depth=1, top_k=1)
    crawl.start_level([oa_seed(7)])
    (work,) = crawl.take()

    ends = crawl.answered(work, [link("lookup", REFS, step=LinkStep.LOOKUP)])

    assert ends == [FetchEnd(FetchKey(7, "oa", CITS), 1, "done")]
    (lookup,) = crawl.take()
    assert crawl.answered(lookup, []) == [FetchEnd(FetchKey(7, "oa", REFS), 1, "done")]
    assert crawl.idle and crawl.finished


def test_a_refusing_source_stops_its_queued_lists_and_the_later_levels() -> None:
    crawl = CitationCrawl(depth=2, top_k=2)
    crawl.start_level([*s2_seed(1), *s2_seed(2), oa_seed(1)])
    s2_first, oa_first = crawl.take()

    ends = crawl.failed(s2_first, "quota", "daily quota spent", source_stops=True)

    assert {(end.key, end.status) for end in ends} == {
        (FetchKey(paper, "s2", relation), "quota") for paper in (1, 2) for relation in (REFS, CITS)
    }
    assert crawl.take() == []  # OpenAlex's work is still in flight; nothing else of s2 is sent
    crawl.answered(oa_first, [])
    assert crawl.idle and not crawl.finished  # level 2 is still to come

    ends = crawl.start_level([*s2_seed(3, level=2), oa_seed(3, level=2)])

    assert ends == [
        FetchEnd(FetchKey(3, "s2", REFS), 2, "quota", "daily quota spent"),
        FetchEnd(FetchKey(3, "s2", CITS), 2, "quota", "daily quota spent"),
    ]
    assert [r.source for r in crawl.take()] == ["oa"]


def test_an_error_ends_only_its_own_lists() -> None:
    crawl = CitationCrawl(depth=1, top_k=2)
    crawl.start_level([*s2_seed(1), *s2_seed(2)])
    (refs,) = crawl.take()

    ends = crawl.failed(refs, "error", "HTTP 404", source_stops=False)

    assert ends == [FetchEnd(FetchKey(1, "s2", REFS), 1, "error", "HTTP 404")]
    assert [r.paper_id for r in crawl.take()] == [1]  # paper 1's citations go on


def test_cancel_ends_every_open_list_and_an_empty_level_finishes() -> None:
    crawl = CitationCrawl(depth=1, top_k=1)
    crawl.start_level([*s2_seed(1)])
    crawl.take()

    ends = crawl.cancel()

    assert {end.status for end in ends} == {"cancelled"} and len(ends) == 2
    nothing = CitationCrawl(depth=2, top_k=5)
    nothing.start_level([])
    assert nothing.idle and not nothing.finished
    nothing.start_level([])
    assert nothing.finished and nothing.planned_papers == set()
