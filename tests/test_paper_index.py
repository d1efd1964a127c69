"""The stored paper index's pure parts: blocks, kept records, a paper's candidates and matching
a query's papers with stored papers by the canonical rules in one index."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import pytest

from lyra_crawl.papers.canonical import (
    BLOCK_LIMIT,
    CanonicalPaper,
    CanonicalPaperIndex,
    PaperRecord,
)
from lyra_crawl.papers.paper_index import (
    RECORDS_KEPT,
    KnownWords,
    Match,
    QueryPaper,
    block_entries,
    joinable,
    kept_paper_records,
    kept_record,
    known_words,
    match_papers,
    merge_kept,
    stored_block_keys,
)
from tests.conftest import REALWORLD_DIR
from training.datasets import NOISY_DEV_SET, dblp_acm_records, noisy_dev_records

NO_WORDS = KnownWords()
TITLE = "Adaptive Sampling of Soil Moisture Networks in Semi-Arid Catchments"


def paper(*records: PaperRecord) -> CanonicalPaper:
    index = CanonicalPaperIndex()
    index.add_many(records)
    (found,) = index.papers()
    return found


def api(title: str = TITLE, **fields: Any) -> PaperRecord:
    return PaperRecord(source="openalex", title=title, kind="api", **fields)


def serp(title: str = TITLE, **fields: Any) -> PaperRecord:
    return PaperRecord(source="mojeek", title=title, kind="serp", **fields)


def kept(*records: PaperRecord) -> list[dict[str, Any]]:
    return merge_kept(map(kept_record, records))


def matched(
    query: Sequence[CanonicalPaper],
    stored: dict[int, list[dict[str, Any]]],
    words: KnownWords = NO_WORDS,
) -> list[Match]:
    """The query's papers matched with every stored paper as a candidate of each."""
    papers = [QueryPaper(found) for found in query]
    return match_papers(papers, [set(stored) for _ in papers], stored, words)


def test_a_stored_paper_is_found_in_the_blocks_a_query_paper_looks_in() -> None:
    first = QueryPaper(paper(api(year=2019, doi="10.1234/ABC")))

    assert stored_block_keys(first.kept) == first.block_keys
    assert "doi:10.1234/abc" in first.identifier_keys, "identifiers are blocked normalised"
    assert first.word_keys and first.edge_keys
    assert all(":" not in key for key in first.word_keys | first.edge_keys)


def test_the_same_title_and_year_without_identifiers_is_the_stored_paper() -> None:
    query = paper(api(title=TITLE.lower() + ".", year=2019, authors=("A. Okafor",)))
    stored = {
        1: kept(api(year=2019, authors=("Ana Okafor",))),
        2: kept(api(year=2015, authors=("Ana Okafor",))),  # years apart: another paper
        3: kept(api(title="Grazing Pressure and Shrub Encroachment in Rangelands", year=2019)),
    }

    assert matched([query], stored) == [Match((0,), (1,))]


def test_a_candidate_is_judged_on_all_its_kept_records() -> None:
    # Its journal version (2016) alone is two years from a 2014 record; the group's years
    # together (the 2015 preprint as well) are one year from it, as in memory.
    journal = api(title="Heat Islands in Coastal Cities: A Case Study", year=2016, doi="10.1/j")
    preprint = api(
        title="Heat islands in coastal cities", year=2015, authors=("Bo Novak",), venue="arXiv"
    )
    query = paper(
        api(
            title="Heat Islands in Coastal Cities - a case study.",
            year=2014,
            venue="arXiv",
            authors=("B. Novak",),
        )
    )

    assert matched([query], {4: kept(journal, preprint)}) == [Match((0,), (4,))]
    assert matched([query], {5: kept(journal)}) == [Match((0,), ())]


def test_stored_papers_join_each_other_only_through_a_query_paper() -> None:
    # Two stored rows the rules would join (one title, one year): neither is the query's paper,
    # and they stay two rows; a query paper that is both makes them one.
    stored = {1: kept(api(year=2019)), 2: kept(api(title=TITLE.upper(), year=2019))}
    other = paper(api(title="Grazing Pressure and Shrub Encroachment in Rangelands", year=2019))

    assert matched([other], stored) == [Match((0,), ())]
    assert matched([paper(serp(year=2019))], stored) == [Match((0,), (1, 2))]


def test_a_title_two_stored_papers_spell_apart_bridges_them_when_a_query_paper_brings_it() -> None:
    # Stored titles are scored only against the query's: the stored paper spelt "Netwrks" is
    # scored against the other stored title once the query's paper brings that very title.
    typo = TITLE.replace("Networks", "Netwrks")
    stored = {1: kept(api(year=2019)), 2: kept(api(title=typo, year=2019))}

    assert matched([paper(serp(year=2019))], stored) == [Match((0,), (1, 2))]
    assert matched([paper(serp(title=typo, year=2019))], stored) == [Match((0,), (1, 2))]
    assert matched([paper(serp(year=2012))], stored) == [Match((0,), ())]


def test_a_stored_paper_an_identifier_rules_out_is_left_out_of_the_matching() -> None:
    # Titles alike, each paper with a DOI of its own: stored paper 1 could join no group its
    # query paper is in. Kept: one sharing an identifier with the query (an arXiv id, whatever
    # its DOI), one without identifiers, one a query paper without a DOI is a candidate of.
    query = [
        QueryPaper(paper(api(year=2019, doi="10.1234/a", arxiv_id="2101.00001"))),
        QueryPaper(paper(api(title=TITLE + " (extended)", year=2019))),
    ]
    stored = {
        1: kept(api(year=2019, doi="10.1234/b")),
        2: kept(api(year=2019, doi="10.1234/c", arxiv_id="2101.00001")),
        3: kept(api(year=2019)),
        4: kept(api(year=2019, doi="10.1234/d")),
    }

    records = {paper_id: kept_paper_records(found) for paper_id, found in stored.items()}
    assert joinable(query, [{1, 2, 3, 4}, {4}], records) == [{2, 3, 4}, {4}]
    # The shared arXiv id joins them whatever their DOIs say, as in memory.
    assert matched([query[0].paper], {2: stored[2]}) == [Match((0,), (2,))]
    assert matched([query[0].paper], {1: stored[1]}) == [Match((0,), ())]


def test_query_papers_are_not_merged_with_each_other_again() -> None:
    # The crawl kept them apart; no stored paper bridges them, so they stay two papers.
    first, second = paper(api(year=2019)), paper(api(title=TITLE + ".", year=2019))

    assert matched([first, second], {}) == [Match((0,), ()), Match((1,), ())]
    bridge = {7: kept(api(title=TITLE.lower(), year=2019))}
    assert matched([first, second], bridge) == [Match((0, 1), (7,))]


def test_a_citation_is_read_on_its_own_evidence_whatever_words_the_index_knows() -> None:
    # "proceedings of the vldb 1999" is a citation by its year, the stored paper's: known venue
    # words from a paper that is no candidate neither make nor unmake the match.
    title = "Cache Conscious Indexing for Decision-Support in Main Memory"
    stored = {3: kept(api(title=title, year=1999))}
    cited = paper(serp(title=f"{title} - Proceedings of the VLDB 1999", year=1999))
    elsewhere = api("Optimizing Queries over Multimedia", venue="Proceedings of the VLDB Endowment")

    assert matched([cited], stored) == [Match((0,), (3,))]
    assert matched([cited], stored, known_words([elsewhere])) == [Match((0,), (3,))]
    assert known_words([elsewhere]).venues == {"proceedings", "vldb", "endowment"}


def test_candidates_are_the_stored_papers_the_index_could_link() -> None:
    query = QueryPaper(paper(api(year=2019, doi="10.1234/x")))
    (word_key, full_key, *_), (edge_key, *_) = sorted(query.word_keys), sorted(query.edge_keys)
    blocks = {
        "doi:10.1234/x": [1],
        edge_key: [2, 3],
        word_key: [4, 5],
        full_key: None,  # full: no longer read
    }
    titles = {
        # The title and more: similar as words (all of the title's in it), not as characters.
        2: [
            "adaptive sampling of soil moisture networks in semi arid catchments of botswana and"
            " namibia a review of field trials"
        ],
        3: ["adaptive sampling of the ocean"],  # starts alike: similar as words, just
        4: ["adaptive sampling of soil moisture network in semi arid catchment"],
        5: ["soil moisture networks in semi arid catchments"],  # the end only: a word block's
        6: ["grazing pressure and shrub encroachment in rangelands"],
    }

    members = query.members(blocks | {word_key: [4, 5, 6]})
    assert (members.sharing, members.edge, members.word) == ({1}, {2, 3}, {4, 5, 6})
    assert query.candidates(members, titles) == {1, 2, 3, 4, 5}
    assert query.candidates(query.members(blocks | {edge_key: [5]}), titles) == {1, 4, 5}, (
        "the end of it"
    )


def test_kept_records_are_distinct_and_bounded() -> None:
    records = [kept_record(api(year=2000 + n % 20, venue="Hydrology")) for n in range(40)]

    found = merge_kept(records, records)

    assert len(found) == RECORDS_KEPT == len({tuple(sorted(map(str, r.items()))) for r in found})
    assert found[0] == records[0], "the first (the stored row's own) stay first"
    assert found[0]["venue"] == "Hydrology", "venues are evidence too"


def test_a_full_title_block_stops_growing_but_an_identifier_block_never_does() -> None:
    full = {"adaptive sampling": list(range(1, BLOCK_LIMIT + 1)), "doi:10.1/x": [1, 2]}

    entries = block_entries(
        full,
        [
            (100, ["adaptive sampling", "doi:10.1/x", "moisture sampling"]),
            (101, ["moisture sampling", "doi:10.1/x"]),
            (2, ["doi:10.1/x"]),  # already in it
        ],
    )

    assert entries == [
        ("doi:10.1/x", 100),
        ("moisture sampling", 100),
        ("moisture sampling", 101),
        ("doi:10.1/x", 101),
    ]


# -- candidates on real data ---------------------------------------------------------------


def real_dblp_acm() -> list[PaperRecord]:
    folder = REALWORLD_DIR.parent / "er" / "dblp_acm"
    if not folder.is_dir():
        pytest.skip(f"DBLP-ACM not found at {folder} (set LYRA_REALWORLD_DIR beside it)")
    return dblp_acm_records(folder)


@pytest.mark.parametrize("data", ["dblp_acm", "noisy_dev"])
def test_every_merge_of_the_rules_on_real_data_is_between_candidates(data: str) -> None:
    """Each group the in-memory index forms is connected by pairs of records that would be
    each other's candidates in the store: the candidates never hide a pair the rules join."""
    records = (
        real_dblp_acm()
        if data == "dblp_acm"
        else list(noisy_dev_records(NOISY_DEV_SET)[0].values())
    )
    index = CanonicalPaperIndex()
    groups: dict[int, list[QueryPaper]] = {}
    for record, key in zip(records, index.add_many(records), strict=True):
        groups.setdefault(key, []).append(QueryPaper(paper(record)))
    merged = [found for found in groups.values() if len(found) > 1]
    assert len(merged) > (2000 if data == "dblp_acm" else 90)

    for found in merged:
        assert connected_as_candidates(found), [p.titles for p in found]


def connected_as_candidates(papers: list[QueryPaper]) -> bool:
    parent = list(range(len(papers)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in combinations(range(len(papers)), 2):
        if candidates(papers[a], papers[b]):
            parent[find(a)] = find(b)
    return len({find(i) for i in range(len(papers))}) == 1


def candidates(first: QueryPaper, second: QueryPaper) -> bool:
    """Whether `second`, stored, is a candidate of `first` (QueryPaper.candidates)."""
    blocks = {key: [2] for key in stored_block_keys(second.kept)}
    return 2 in first.candidates(first.members(blocks), {2: second.titles})
