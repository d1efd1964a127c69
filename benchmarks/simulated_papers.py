"""The simulator's papers as a crawl's sources show them, with the simulator's own ground truth.

For the canonical merge's precision on titles built alike: every paper of a query's citation
graph (lyra_crawl.simulator.citations: 200 corpus results and 40 outside papers, each titled
"<Query>: <topic> of <subject> <number>") enters as

* a results page's record: the on-topic title, nothing else;
* a citation list's end without authors: the title and its year;
* the scholarly APIs' records (lyra_crawl.simulator.engines.papers): Semantic Scholar's,
  OpenAlex's and Crossref's noisy spelling of the title, with year, authors and venue; a paper
  with a preprint (paper_ids.has_preprint) also as its preprint's record, a year earlier.

Identifiers are left out, so only the title rules decide. Different paper numbers are different
papers; a preprint is its paper (the simulator's deliberate alias). Beside them, as in the index
of a real task, are records of other papers whose venue and author fields are made of the words
these titles are made of (real journals such as "Land Use Policy", surnames such as "Storm").
"""

from __future__ import annotations

from collections.abc import Iterable

from lyra_crawl.papers.canonical import CanonicalPaperIndex, PaperRecord
from lyra_crawl.simulator.citations import graph_papers
from lyra_crawl.simulator.corpus import SimResult, make_result
from lyra_crawl.simulator.engines.paper_ids import has_preprint
from lyra_crawl.simulator.engines.papers import noisy_title, venue
from lyra_crawl.simulator.engines.scholarly import author_names

QUERIES = tuple(
    f"{subject} {topic}"
    for subject in ("coastal", "urban", "soil", "forest", "river", "arctic", "crop")
    for topic in ("flood risk", "heat stress", "carbon storage")
)


# Journals whose names are words of the simulator's subjects, and people whose names are too.
OTHER_VENUES = (
    "Journal of Coastal Research",
    "Water Quality Research Journal",
    "Energy Policy",
    "Land Use Policy",
    "Urban Climate",
    "Regional Environmental Change",
    "Public Health",
    "Fisheries Research",
    "Forest Ecology and Management",
    "Groundwater",
    "Biodiversity and Conservation",
    "International Migration Review",
    "Journal of Rural Studies",
    "Natural Hazards",
    "Arid Land Research and Management",
    "Tropical Conservation Science",
    "Governance",
    "Evidence and Policy",
    "Journal of Historical Geography",
    "National Institute Economic Review",
)
OTHER_AUTHORS = ("Rose Storm", "Grant Rivers", "Hope Field", "Dale Waters", "Summer Land")


def paper_records(query: str) -> tuple[list[PaperRecord], list[int]]:
    """Every record of the query's graph papers, and the paper number each one shows; the
    records of other papers (numbered below zero) first."""
    records = [
        PaperRecord(source="crossref", title="Editorial", venue=venue_name, authors=OTHER_AUTHORS)
        for venue_name in OTHER_VENUES
    ]
    truth = [-1 - n for n in range(len(records))]
    for key in graph_papers(query):
        shown = _records(make_result(query, key.number, on_topic=True))
        records += shown
        truth += [key.number] * len(shown)
    return records, truth


def merge_errors(
    records: list[PaperRecord], truth: list[int], keys: Iterable[int]
) -> tuple[int, int]:
    """False merges (papers joined to another paper's group) and missed merges (records of one
    paper left in groups of their own) of one index's keys. A record with a title and nothing
    else is never missed: a title alone is no evidence to merge on."""
    papers_by_key: dict[int, set[int]] = {}
    keys_by_paper: dict[int, set[int]] = {}
    for record, paper, key in zip(records, truth, keys, strict=True):
        papers_by_key.setdefault(key, set()).add(paper)
        if record.year is not None or record.authors:
            keys_by_paper.setdefault(paper, set()).add(key)
    false = sum(len(papers) - 1 for papers in papers_by_key.values())
    missed = sum(len(keys) - 1 for keys in keys_by_paper.values())
    return false, missed


def simulated_merge_errors(queries: Iterable[str] = QUERIES) -> dict[str, float]:
    """False and missed merges over the queries, each query's records in one index."""
    false = missed = 0
    for query in queries:
        records, truth = paper_records(query)
        query_false, query_missed = merge_errors(
            records, truth, CanonicalPaperIndex().add_many(records)
        )
        false += query_false
        missed += query_missed
    return {"simulated_false_merges": false, "simulated_missed_merges": missed}


def _records(result: SimResult) -> list[PaperRecord]:
    authors = tuple(author_names(result))
    number = result.index
    shown = [
        PaperRecord(source="serp:duckduckgo", title=result.title, kind="serp"),
        PaperRecord(source="semantic_scholar", title=result.title, year=result.year),
        PaperRecord(
            source="semantic_scholar",
            title=noisy_title(result, 1),
            year=result.year,
            authors=authors,
            venue=None if number % 2 else venue(result),
        ),
        PaperRecord(
            source="openalex",
            title=noisy_title(result, 2),
            year=result.year,
            authors=authors,
            venue=venue(result) if result.doi or number % 2 else None,
        ),
        PaperRecord(
            source="crossref",
            title=noisy_title(result, 3),
            year=None if number % 7 == 3 else result.year,
            authors=authors,
            venue=venue(result),
        ),
    ]
    if has_preprint(number):
        shown += [
            PaperRecord(
                source=source,
                title=noisy_title(result, variant),
                year=result.year - 1,
                authors=authors,
                venue=preprint_venue,
            )
            for source, variant, preprint_venue in (
                ("semantic_scholar", 0, "arXiv.org"),
                ("openalex", 2, "arXiv (Cornell University)"),
            )
        ]
    return shown
