"""CanonicalPaperIndex merge rules, attribution and field selection."""

from __future__ import annotations

import random
from typing import Any

import pytest

from lyra_crawl.papers.canonical import (
    CanonicalPaper,
    CanonicalPaperIndex,
    PaperRecord,
    is_generic_title,
    normalize_title,
)

TITLE = "Locally Adaptive Dimensionality Reduction for Indexing Large Time Series Databases"


def api(title: str = TITLE, source: str = "semantic_scholar", **fields: Any) -> PaperRecord:
    return PaperRecord(source=source, title=title, kind="api", **fields)


def serp(title: str = TITLE, source: str = "serp:duckduckgo", **fields: Any) -> PaperRecord:
    return PaperRecord(source=source, title=title, kind="serp", **fields)


def merged(*records: PaperRecord, **options: int) -> list[CanonicalPaper]:
    index = CanonicalPaperIndex(**options)
    index.add_many(records)
    return index.papers()


# --- normalisation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "expected"),
    [
        ("  Deep   Learning:  A Review! ", "deep learning a review"),
        ("Über Schrödinger's Équations", "uber schrodinger s equations"),
        ("Lud&#228;scher &amp; Co", "ludascher co"),
        ("Object-Oriented DBMS", "object oriented dbms"),
        ("Workflow Automation (Tutorial)", "workflow automation"),
        ("Mining Streams (Short Version)", "mining streams"),
        ("Query Optimization (demo)", "query optimization"),
        ("An Aspect of Query Optimization (Extended Abstract)", "an aspect of query optimization"),
        ("Large Graphs (Poster)", "large graphs"),
        ("Are We Working On the Right Problems? (Panel)", "are we working on the right problems"),
        ("Index Research: Forest or Trees? (Panel Abstract)", "index research forest or trees"),
        ("Java and Relational Databases (tutorial): SQLJ", "java and relational databases sqlj"),
        ("Tutorial: Data Access", "data access"),
        ("Online Query Processing: A Tutorial", "online query processing"),
        ("Panel", "panel"),
        ("Abstract Interpretation of Programs", "abstract interpretation of programs"),
    ],
)
def test_normalize_title(title: str, expected: str) -> None:
    assert normalize_title(title) == expected


@pytest.mark.parametrize(
    "title",
    [
        "Editorial",
        "Guest Editorial",
        "Editor's Notes",
        "Guest editor's introduction",
        "Letter from the Editor",
        "Chair's Message",
        "Book Review",
        "Book Reviews",
        "Book Review Column",
        "Preface",
        "Foreword",
        "Keynote",
        "Keynote Address",
        "Introduction",
        "Reminiscences on Influential Papers",
        "Errata",
        "In Memoriam",
        "Panel",
        "(Panel)",
        "Author Index",
    ],
)
def test_generic_titles(title: str) -> None:
    assert is_generic_title(normalize_title(title))


@pytest.mark.parametrize(
    "title",
    [TITLE, "Introduction to Information Retrieval", "Editorial Bias in Peer Review", "Panels"],
)
def test_specific_titles_are_not_generic(title: str) -> None:
    assert not is_generic_title(normalize_title(title))


# --- identifier merges ---------------------------------------------------------------------


def test_same_doi_merges_despite_different_titles() -> None:
    papers = merged(
        api("A completely different title", doi="10.1000/XYZ", year=2001),
        serp("Something else entirely", doi="https://doi.org/10.1000/xyz"),
    )
    assert len(papers) == 1
    assert papers[0].doi == "10.1000/xyz"


def test_different_dois_stay_apart_even_with_equal_titles() -> None:
    papers = merged(
        api(doi="10.1000/conference", year=2001, authors=("Kaushik Chakrabarti",)),
        api(doi="10.1000/journal", year=2001, authors=("Kaushik Chakrabarti",)),
    )
    assert len(papers) == 2


def test_arxiv_id_links_preprint_and_journal_version_transitively() -> None:
    preprint = api("Attention is all you need", source="arxiv", arxiv_id="1706.03762v5")
    journal = api("Attention is all you need", source="crossref", doi="10.5555/3295222.3295349")
    # Semantic Scholar knows both ids; it arrives last and joins the two others.
    bridge = api(
        "Attention Is All You Need",
        doi="10.5555/3295222.3295349",
        arxiv_id="arXiv:1706.03762",
    )
    index = CanonicalPaperIndex()
    first, second = index.add(preprint), index.add(journal)
    assert first != second  # no year, no authors: the title alone is not enough
    index.add(bridge)
    assert index.key_of(0) == index.key_of(1) == index.key_of(2) == 0
    [paper] = index.papers()
    assert (paper.doi, paper.arxiv_id) == ("10.5555/3295222.3295349", "1706.03762")
    assert paper.sources == {"arxiv", "crossref", "semantic_scholar"}


def test_arxiv_datacite_doi_links_to_arxiv_id() -> None:
    papers = merged(
        api("Preprint title", source="openalex", doi="10.48550/arXiv.2101.00001"),
        serp("Other wording", url="https://arxiv.org/abs/2101.00001v2", arxiv_id="2101.00001"),
    )
    assert len(papers) == 1
    assert papers[0].arxiv_id == "2101.00001"


def test_same_pmid_merges() -> None:
    papers = merged(
        api("Title in PubMed", source="pubmed", pmid="31452104"),
        api(
            "Title in OpenAlex", source="openalex", pmid="https://pubmed.ncbi.nlm.nih.gov/31452104"
        ),
    )
    assert len(papers) == 1
    assert papers[0].pmid == "31452104"


# --- title merges --------------------------------------------------------------------------


def test_similar_title_and_same_year_merge() -> None:
    papers = merged(
        api(TITLE, year=2001),
        api(TITLE.replace("Dimensionality", "Dimensionalty").lower(), "openalex", year=2001),
    )
    assert len(papers) == 1


def test_similar_title_and_year_within_tolerance_merge() -> None:
    assert len(merged(api(year=2001), serp(year=2002))) == 1


def test_similar_title_and_author_overlap_merge_without_years() -> None:
    papers = merged(
        api(authors=("Kaushik Chakrabarti", "Sharad Mehrotra")),
        serp(TITLE.upper() + ".", authors=("S. Mehrotra",)),
    )
    assert len(papers) == 1


def test_author_overlap_reads_family_name_first_formats() -> None:
    papers = merged(
        api(authors=("Mehrotra, Sharad",)),
        api(source="pubmed", authors=("Mehrotra S",)),
        api(source="openalex", authors=("Sharad Mehrotra Jr.",)),
    )
    assert len(papers) == 1


def test_similar_title_without_corroboration_stays_apart() -> None:
    assert len(merged(api(), serp())) == 2


def test_similar_title_years_far_apart_no_authors_stay_apart() -> None:
    assert len(merged(api(year=1995), api(source="openalex", year=2010))) == 2


def test_years_far_apart_veto_even_shared_authors() -> None:
    papers = merged(
        api(year=1996, authors=("Surajit Chaudhuri",)),
        api(source="openalex", year=1999, authors=("Surajit Chaudhuri",)),
    )
    assert len(papers) == 2


def test_year_tolerance_is_configurable() -> None:
    records = (api(year=2001), api(source="openalex", year=2002))
    assert len(merged(*records)) == 1
    assert len(merged(*records, year_tolerance=0)) == 2


def test_dissimilar_titles_stay_apart() -> None:
    papers = merged(
        api("Fast Algorithms for Mining Association Rules", year=1994),
        api("Efficient Processing of Spatial Joins Using R-trees", year=1994),
    )
    assert len(papers) == 2


def test_title_threshold_is_configurable() -> None:
    records = (
        api("Query Processing for Arrays", year=1999),
        api("Query Processing of Arrays", year=1999),
    )
    assert len(merged(*records)) == 1
    assert len(merged(*records, title_threshold=99)) == 2


def test_noise_suffix_is_stripped_before_scoring() -> None:
    papers = merged(
        api("Workflow Automation: Applications, Technology, and Research (Tutorial)", year=1995),
        api("Workflow automation: applications, technology and research", "acm", year=1995),
    )
    assert len(papers) == 1


def test_subtitle_variant_needs_year_and_authors() -> None:
    short = api("Constructing the Next 100 Database Management Systems", year=1994)
    long_title = short.title + ": Like the Handyman or Like the Engineer?"
    assert len(merged(short, api(long_title, source="acm", year=1994))) == 2
    with_authors = [
        api(short.title, year=1994, authors=("Andreas Geppert",)),
        api(long_title, source="acm", year=1994, authors=("Andreas Geppert", "K. Dittrich")),
    ]
    assert len(merged(*with_authors)) == 1


@pytest.mark.parametrize(
    "title", ["Editorial", "Book Review Column", "Reminiscences on Influential Papers"]
)
def test_generic_titles_never_merge_on_title(title: str) -> None:
    papers = merged(
        api(title, year=2001, authors=("Richard Snodgrass",), venue="ACM TODS"),
        api(title, source="acm", year=2001, authors=("Richard Snodgrass",), venue="SIGMOD Record"),
    )
    assert len(papers) == 2


def test_generic_title_with_different_venues_and_no_ids_stays_apart() -> None:
    papers = merged(
        api("Editorial", year=2001, venue="ACM TODS"),
        api("Editorial", source="openalex", year=2001, venue="VLDB Journal"),
    )
    assert len(papers) == 2


def test_generic_titles_still_merge_by_identifier() -> None:
    papers = merged(
        api("Editorial", doi="10.1000/ed.1"),
        serp("Editorial", doi="10.1000/ED.1"),
    )
    assert len(papers) == 1


def test_erratum_stays_apart_from_the_paper() -> None:
    papers = merged(
        api("A Database Model for Object Dynamics", year=1997, authors=("M. Papazoglou",)),
        api("Erratum: A database model for object dynamics", "acm", year=1997),
    )
    assert len(papers) == 2


def test_parts_stay_apart() -> None:
    title = "Database Tuning: Principles, Experiments, and Troubleshooting Techniques (Part {})"
    papers = merged(
        api(title.format("I"), year=2002, authors=("Dennis Shasha",)),
        api(title.format("II"), year=2002, authors=("Dennis Shasha",)),
    )
    assert len(papers) == 2


def test_merges_are_transitive_through_title_matches() -> None:
    index = CanonicalPaperIndex()
    keys = index.add_many(
        [
            api(year=2001, doi="10.1000/a"),
            serp(TITLE.lower(), year=2001),
            serp(TITLE, url="https://example.org", doi="10.1000/a"),
        ]
    )
    assert keys == [0, 0, 0]


# --- attribution and fields ----------------------------------------------------------------


def test_attribution() -> None:
    papers = merged(
        api("Paper seen by both", year=2020),
        serp("Paper seen by both", year=2020),
        api("Paper only in an API", year=2020),
        serp("Paper only on a results page", year=2020),
    )
    attributions = {paper.title: paper.attribution for paper in papers}
    assert attributions == {
        "Paper seen by both": "both",
        "Paper only in an API": "api_only",
        "Paper only on a results page": "serp_only",
    }


def test_richest_fields_are_kept() -> None:
    [paper] = merged(
        serp(
            TITLE.upper(),
            doi="10.1000/x",
            abstract="A snippet from the results page that is long, longer than any API abstract.",
            url="https://example.org/paper",
        ),
        api(TITLE, source="openalex", doi="10.1000/x", abstract="Short abstract.", venue=""),
        api(
            TITLE + ".",
            doi="10.1000/x",
            year=2001,
            authors=("Kaushik Chakrabarti", "Eamonn Keogh"),
            venue="SIGMOD",
            abstract="A longer abstract from Semantic Scholar.",
            pmid="123",
        ),
    )
    assert paper.title == TITLE  # the first API title, not the SERP's upper-cased one
    assert paper.normalized_title == normalize_title(TITLE)
    assert paper.year == 2001
    assert paper.authors == ("Kaushik Chakrabarti", "Eamonn Keogh")
    assert paper.venue == "SIGMOD"
    assert paper.abstract == "A longer abstract from Semantic Scholar."
    assert (paper.doi, paper.pmid) == ("10.1000/x", "123")
    assert paper.sources == {"serp:duckduckgo", "openalex", "semantic_scholar"}
    assert paper.attribution == "both"
    assert len(paper.records) == 3


def test_serp_abstract_is_used_when_no_api_has_one() -> None:
    [paper] = merged(serp(year=2001, abstract="Snippet."), api(year=2001))
    assert paper.abstract == "Snippet."


def test_journal_doi_wins_over_arxiv_doi() -> None:
    [paper] = merged(
        api(source="openalex", doi="10.48550/arxiv.2101.00001"),
        api(arxiv_id="2101.00001", doi=None),
        api(source="crossref", doi="10.1000/journal", arxiv_id="2101.00001"),
    )
    assert (paper.doi, paper.arxiv_id) == ("10.1000/journal", "2101.00001")


# --- index behaviour -----------------------------------------------------------------------


def test_keys_are_first_record_indices_and_papers_are_ordered() -> None:
    index = CanonicalPaperIndex()
    assert index.add(api("First paper", year=2000)) == 0
    assert index.add(api("Second paper", year=2000)) == 1
    assert index.add(serp("First paper", year=2000)) == 0
    assert [paper.key for paper in index.papers()] == [0, 1]
    assert len(index) == 3


def test_a_later_record_can_join_two_papers_under_the_smaller_key() -> None:
    index = CanonicalPaperIndex()
    index.add(api("Paper A", doi="10.1000/a"))
    index.add(api("Paper B", arxiv_id="2101.00001"))
    assert index.key_of(1) == 1
    index.add(api("Paper A or B", doi="10.1000/a", arxiv_id="2101.00001"))
    assert index.key_of(1) == index.key_of(2) == 0


def test_add_many_matches_repeated_add() -> None:
    rng = random.Random(7)
    words = ["query", "stream", "index", "graph", "learning", "database", "join", "spatial"]
    records = []
    for _ in range(300):
        title = " ".join(rng.choices(words, k=5))
        if rng.random() < 0.3:
            title = title.title() + " (Tutorial)"
        kind = rng.choice(["api", "serp"])
        records.append(
            PaperRecord(
                source=kind,
                title=title,
                kind=kind,
                year=rng.choice([None, 2000, 2001, 2005]),
                authors=tuple(rng.sample(["Ng", "Chen", "Gray", "Codd"], k=rng.randint(0, 2))),
                doi=rng.choice([None, None, "10.1000/a", "10.1000/b"]),
            )
        )
    batch = CanonicalPaperIndex()
    batch_keys = batch.add_many(records)
    single = CanonicalPaperIndex()
    for record in records:
        single.add(record)
    assert batch_keys == [single.key_of(i) for i in range(len(records))]
    assert len(batch.papers()) < len(records)  # the fixture really merges something


def test_blocking_finds_a_near_duplicate_among_many_titles() -> None:
    rng = random.Random(11)
    vocabulary = [
        "".join(rng.choices("abcdefghiklmnoprstuv", k=rng.randint(4, 11))) for _ in range(3000)
    ]
    records = [api(" ".join(rng.choices(vocabulary, k=7)), year=2010) for _ in range(3000)]
    target = records[10].title
    typo = target[:5] + target[6:]  # one dropped character
    index = CanonicalPaperIndex()
    index.add_many(records)
    assert index.add(serp(typo.upper(), year=2011)) == index.key_of(10)
