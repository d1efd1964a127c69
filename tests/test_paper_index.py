"""The stored paper index's pure parts: blocks, kept records, the close-title prefilter and
matching a query's paper against stored candidates by the canonical rules."""

from __future__ import annotations

import csv
from itertools import combinations
from typing import Any

import pytest
from rapidfuzz import fuzz

from lyra_crawl.papers.canonical import CanonicalPaper, CanonicalPaperIndex, PaperRecord
from lyra_crawl.papers.paper_index import (
    BLOCK_LIMIT,
    CLOSE_TITLE_SCORE,
    RECORDS_KEPT,
    QueryPaper,
    StoredCandidate,
    block_entries,
    compact_titles,
    kept_record,
    merge_kept,
)
from tests.conftest import REALWORLD_DIR

TITLE = "Adaptive Sampling of Soil Moisture Networks in Semi-Arid Catchments"


def paper(*records: PaperRecord) -> CanonicalPaper:
    index = CanonicalPaperIndex()
    index.add_many(records)
    (found,) = index.papers()
    return found


def api(title: str = TITLE, **fields: Any) -> PaperRecord:
    return PaperRecord(source="openalex", title=title, kind="api", **fields)


def stored(paper_id: int, *records: PaperRecord) -> StoredCandidate:
    return StoredCandidate(paper_id, merge_kept(map(kept_record, records)))


def test_a_stored_paper_is_found_in_the_blocks_a_query_paper_looks_in() -> None:
    first = QueryPaper(paper(api(year=2019, doi="10.1234/ABC")))
    again = stored(7, *first.records)

    assert again.block_keys == set(first.block_keys)
    assert "doi:10.1234/abc" in again.block_keys, "identifiers are blocked normalised"
    assert all(":" not in key for key in first.title_keys), "title keys never meet identifiers"


def test_the_same_title_and_year_without_identifiers_is_the_stored_paper() -> None:
    query = QueryPaper(paper(api(title=TITLE.lower() + ".", year=2019, authors=("A. Okafor",))))
    candidates = [
        stored(1, api(year=2019, authors=("Ana Okafor",))),
        stored(2, api(year=2015, authors=("Ana Okafor",))),  # years apart: another paper
        stored(3, api(title="Grazing Pressure and Shrub Encroachment in Rangelands", year=2019)),
    ]

    assert query.matches(candidates) == [1]


def test_a_candidate_is_judged_on_all_its_kept_records() -> None:
    # Its journal version (2016) alone is two years from a 2014 record; the group's years
    # together (the 2015 preprint as well) are one year from it, as in memory.
    candidate = stored(
        4,
        api(title="Heat Islands in Coastal Cities: A Case Study", year=2016, doi="10.1234/j"),
        api(title="Heat islands in coastal cities", year=2015, authors=("Bo Novak",)),
    )
    query = QueryPaper(
        paper(api(title="Heat Islands in Coastal Cities - a case study.", year=2014))
    )

    assert query.matches([candidate]) == [4]
    assert query.matches([stored(5, *candidate.records[:1])]) == []


def test_only_candidates_with_a_close_title_are_judged() -> None:
    query = QueryPaper(paper(api(year=2019)))
    titles = {
        1: [TITLE.upper()],
        2: [TITLE + ": a field trial in Botswana"],
        3: ["Something Else Entirely", TITLE.replace(" ", "")],
        4: ["Grazing Pressure and Shrub Encroachment"],
    }

    close = query.close_titles(
        {i: "\n".join(compact_titles({"title": t} for t in found)) for i, found in titles.items()}
    )

    assert close == {1, 2, 3}


def test_kept_records_are_distinct_and_bounded() -> None:
    records = [kept_record(api(year=2000 + n % 20)) for n in range(40)]

    kept = merge_kept(records, records)

    assert len(kept) == RECORDS_KEPT == len({tuple(sorted(r.items())) for r in kept})
    assert kept[0] == records[0], "the first (the stored row's own) stay first"


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


# -- the prefilter on real data ------------------------------------------------------------


def dblp_acm_records() -> list[PaperRecord]:
    folder = REALWORLD_DIR.parent / "er" / "dblp_acm"
    if not folder.is_dir():
        pytest.skip(f"DBLP-ACM not found at {folder} (set LYRA_REALWORLD_DIR beside it)")
    records = []
    for source, name in (("dblp", "DBLP2.csv"), ("acm", "ACM.csv")):
        with open(folder / name, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                year = row["year"].strip()
                records.append(
                    PaperRecord(
                        source=source,
                        title=row["title"],
                        year=int(year) if year.isdigit() else None,
                        authors=tuple(a.strip() for a in row["authors"].split(",") if a.strip()),
                        source_id=row["id"],
                    )
                )
    return records


def test_every_merge_of_the_rules_on_dblp_acm_passes_the_close_title_prefilter() -> None:
    """Each group the in-memory index forms is connected by close titles: the prefilter never
    hides a pair the title rules join."""
    records = dblp_acm_records()
    index = CanonicalPaperIndex()
    groups: dict[int, list[str]] = {}
    for record, key in zip(records, index.add_many(records), strict=True):
        groups.setdefault(key, []).append(compact_titles([{"title": record.title}])[0])
    merged = [titles for titles in groups.values() if len(titles) > 1]
    assert len(merged) > 2000

    for titles in merged:
        assert connected_by_close_titles(titles), titles


def connected_by_close_titles(titles: list[str]) -> bool:
    parent = list(range(len(titles)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in combinations(range(len(titles)), 2):
        scores = (fuzz.ratio(titles[a], titles[b]), fuzz.partial_ratio(titles[a], titles[b]))
        if max(scores) >= CLOSE_TITLE_SCORE:
            parent[find(a)] = find(b)
    return len({find(i) for i in range(len(titles))}) == 1
