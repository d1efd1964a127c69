"""Facets: detection from the bundled vocabulary, filtering, carry-over, and their config errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lyra_crawl.config import ConfigError, load_config, parse_config
from lyra_crawl.papers.facets import chosen_facets, keeps, paper_facets
from lyra_crawl.records import StoredPaper
from lyra_crawl.retrieval import Document, FacetFilter
from lyra_crawl.retrieval.collected import paper_document
from lyra_crawl.retrieval.facets import (
    ConversationError,
    ConversationsInFolder,
    ConversationsInMemory,
    decide,
    detect,
)

CONFIG_DIR = Path(__file__).resolve().parent.parent / "config"
PARSERS = (CONFIG_DIR / "search_parsers.yaml").read_text()
POLICY = (CONFIG_DIR / "engines.yaml").read_text()
RULES = load_config().retrieval.facets


def named(question: str) -> dict[str, str]:
    filters, _ = detect(question, RULES)
    return {f.name: f.describe() for f in filters}


@pytest.mark.parametrize(
    ("question", "year"),
    [
        ("papers since 2020 on peat fires", "year=2020.."),
        ("papers from 2021 on peat fires", "year=2021.."),
        ("studies after 2019 about haze", "year=2020.."),
        ("work until 2015 on haze", "year=..2015"),
        ("work before 2015 on haze", "year=..2014"),
        ("what did 2015-2019 studies find", "year=2015..2019"),
        ("reviews between 2010 and 2012 on methane", "year=2010..2012"),
        ("methane fluxes in 2021", "year=2021"),
        ("since 2015 until 2019, peat", "year=2015..2019"),
    ],
)
def test_years_are_read_in_their_usual_forms(question: str, year: str) -> None:
    assert named(question)["year"] == year


def test_terms_and_patterns_name_their_values_and_leave_the_search_text() -> None:
    filters, text = detect(
        "peat fire papers on arXiv or PubMed published in Nature since 2020", RULES
    )
    found = {f.name: f for f in filters}
    assert found["source"].values == ("arxiv", "pubmed")
    assert found["venue"].values == ("Nature",) and found["venue"].match == "contains"
    assert found["year"].low == 2020 and found["year"].high is None
    assert text == "peat fire papers on or"
    assert named("results from site:nature.com about haze")["site"] == "site@nature.com"
    assert named("anything in german about haze")["language"] == "language=de"
    assert named("haze papers found by both")["attribution"] == "attribution=both"
    assert named("do peat fires emit methane?") == {}
    # A year in a claim's own words, without a facet word before it, is no facet.
    assert named("2019 was the year of the fires") == {}


DOCUMENTS = [
    Document("a", "Peat fires", "carbon", {"year": 2016, "source": ("openalex",)}),
    Document("b", "Methane from peat", "fluxes", {"year": 2021, "source": ("arxiv", "openalex")}),
    Document("c", "Haze and health", "admissions", {"year": 2022, "source": ("pubmed",)}),
    Document("d", "A web page", "snippet", {"site": "blog.example.org"}),
]


def kept(filters: tuple[FacetFilter, ...]) -> list[str]:
    decision, mask = decide(filters, (), "", DOCUMENTS)
    assert decision.kept == sum(mask)
    return [doc.id for doc, keep in zip(DOCUMENTS, mask, strict=True) if keep]


def test_filters_keep_the_documents_whose_facets_match() -> None:
    assert kept(detect("since 2021", RULES)[0]) == ["b", "c"]
    assert kept(detect("on arXiv", RULES)[0]) == ["b"]
    assert kept(detect("on openalex since 2020", RULES)[0]) == ["b"]
    assert kept(detect("site:example.org", RULES)[0]) == ["d"]
    assert kept(()) == ["a", "b", "c", "d"]


def test_export_papers_and_select_narrow_a_paper_with_the_same_filter() -> None:
    # One filter: the options of `scrapy export-papers` and the words of a question build the
    # same FacetFilter, and a stored paper has the same facets for both.
    papers = [
        StoredPaper(1, "Peat", "peat", "both", year=2019, sources=("arxiv", "openalex")),
        StoredPaper(2, "Haze", "haze", "api_only", year=2021, sources=("pubmed",)),
        StoredPaper(3, "Bogs", "bogs", "serp_only", year=2022, sources=("arxiv",)),
        StoredPaper(4, "Fens", "fens", "both", sources=("arxiv",), evidence="abstract"),
    ]
    named, _ = detect("peat papers on arxiv since 2020 found by both", RULES)
    chosen = chosen_facets(year_from=2020, sources={"arxiv"}, attributions={"both"})
    assert {(f.field, f.match, f.values, f.low, f.high) for f in named} == {
        (f.field, f.match, f.values, f.low, f.high) for f in chosen
    }
    documents = [paper_document(p) for p in papers]
    assert [d.facets for d in documents] == [paper_facets(p) for p in papers]
    for filters in [
        chosen_facets(year_from=2020, sources={"arxiv"}),
        chosen_facets(year_to=2019),
        chosen_facets(attributions={"both"}, evidence={"abstract"}),
    ]:
        by_export = [p.id for p in papers if keeps(filters, paper_facets(p))]
        _, mask = decide(filters, (), "", documents)
        assert [d.id for d, k in zip(documents, mask, strict=True) if k] == [
            f"paper:{i}" for i in by_export
        ]
    assert [p.id for p in papers if keeps(chosen_facets(year_from=2020), paper_facets(p))] == [
        2,
        3,
    ], "a paper of unknown year is outside any year range"


def test_a_facet_that_matches_nothing_says_so_and_which_values_there_are() -> None:
    filters, _ = detect("peat on crossref", RULES)
    decision, mask = decide(filters, (), "peat", DOCUMENTS)
    assert not any(mask) and decision.kept == 0
    assert decision.note == (
        "no document matches source=crossref (their source: arxiv, openalex, pubmed)"
    )
    assert "0 of 4 documents" in decision.describe()
    filters, _ = detect("peat published in Science", RULES)
    decision, _ = decide(filters, (), "peat", DOCUMENTS)
    assert decision.note == "no document has a venue to match venue~Science"
    filters, _ = detect("on pubmed since 2023", RULES)
    decision, _ = decide(filters, (), "x", DOCUMENTS)
    assert decision.note == "no document matches year=2023.. (their year: 2016, 2021, 2022)"


def test_a_question_naming_no_facet_carries_the_last_ones_of_its_conversation(
    tmp_path: Path,
) -> None:
    for conversations in (ConversationsInMemory(), ConversationsInFolder(tmp_path / "c")):
        first, _ = detect("papers from 2021 on peat fires", RULES)
        conversations.remember("peat", first)
        assert conversations.previous("peat") == first
        assert conversations.previous("another") == ()
        decision, mask = decide((), conversations.previous("peat"), "methane", DOCUMENTS)
        assert decision.carried == first and decision.applied == first
        assert "carried from the conversation" in decision.describe()
        assert [d.id for d, k in zip(DOCUMENTS, mask, strict=True) if k] == ["b", "c"]
    # Across runs: a new instance on the same folder remembers.
    assert ConversationsInFolder(tmp_path / "c").previous("peat")[0].low == 2021
    (tmp_path / "c" / "broken.json").write_text("{not json")
    with pytest.raises(ConversationError, match=r"broken\.json cannot be read .*delete it"):
        ConversationsInFolder(tmp_path / "c").previous("broken")


def with_retrieval(edit) -> str:
    doc = yaml.safe_load(POLICY)
    edit(doc["retrieval"])
    return yaml.safe_dump(doc)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r["facets"]["venue"].update(patterns=["(unclosed"]),
            "engines.yaml: retrieval.facets.venue.patterns[0] is not a valid regular expression",
        ),
        (
            lambda r: r["facets"]["venue"].update(patterns=["in (\\w+)"]),
            "retrieval.facets.venue.patterns[0] has no (?P<value>...) group",
        ),
        (
            lambda r: r["facets"]["source"].update(values={}),
            "retrieval.facets.source.values is missing: a term facet lists its values",
        ),
        (
            lambda r: r["facets"]["source"]["values"].update(arxiv=[]),
            "retrieval.facets.source.values.arxiv has no phrase",
        ),
        (
            lambda r: r["facets"].update(Year={"kind": "year"}),
            "facet name 'Year' must be lower_snake_case",
        ),
        (
            lambda r: r["facets"]["year"].update(kind="date"),
            "retrieval.facets.year.kind must be one of year, term, pattern (got 'date')",
        ),
        (
            lambda r: r["cross_encoder"].update(model="minilm"),
            "retrieval.cross_encoder.model is not a model lyra knows (got 'minilm')",
        ),
        (
            lambda r: r["semantic"].update(model="bert"),
            "retrieval.semantic.model is not a model lyra knows (got 'bert')",
        ),
        (
            lambda r: r.update(chunk_overlap=600),
            "retrieval.chunk_overlap (600) must be below chunk_size (600)",
        ),
        (
            lambda r: r["fusion"].update(semantic_weight=0.0, keyword_weight=0.0),
            "semantic_weight and keyword_weight are both 0",
        ),
    ],
)
def test_bad_retrieval_settings_are_one_clear_error(edit, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(PARSERS, with_retrieval(edit))
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_bundled_retrieval_section_holds_the_measured_defaults() -> None:
    retrieval = load_config().retrieval
    assert (retrieval.chunk_size, retrieval.chunk_overlap) == (600, 75)
    assert (retrieval.initial_k, retrieval.final_k) == (10, 3)
    assert retrieval.semantic.model == "wordllama"
    assert retrieval.cross_encoder.model is None and retrieval.cross_encoder.threshold == -3.0
    assert (retrieval.cross_encoder.weight, retrieval.llm.weight) == (0.4, 0.6)
    assert set(retrieval.facets) == {
        "year",
        "source",
        "venue",
        "site",
        "language",
        "attribution",
        "evidence",
    }
