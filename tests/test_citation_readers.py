"""The citation readers on real captured answers: Semantic Scholar's /paper/{id}/citations page
(tests/data/realworld), OpenAlex's single work with its referenced_works and its works lists
(../shared/realworld, read in place; without it those tests skip with the reason); other
endpoints' answers, error documents and blocks. Each paper is checked field by field against
the entry it came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome, PageRequest
from lyra_crawl.engines.citation_links import LinkRequest, LinkStep, PaperIds, Relation
from lyra_crawl.engines.citations import first_link_requests, read_links
from lyra_crawl.engines.openalex import abstract_text
from tests.conftest import realworld_dir
from tests.realworld_fields import PROJECT_DIR

CONFIG = load_config()
S2 = CONFIG.engine("semantic_scholar")
OPENALEX = CONFIG.engine("openalex")
S2_CITATIONS = PROJECT_DIR / "api/semantic_scholar/s2py-paper-citations-offset0-2024-07.json"
SECRETS = {"s2_api_key": "k-s2", "openalex_api_key": "k-oa", "contact_email": "me@example.org"}


def params(request: LinkRequest) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(request.page.url).query).items()}


def s2_list(relation: Relation, *, room: int = 1000) -> LinkRequest:
    (request,) = [
        r
        for r in first_link_requests(
            S2, PaperIds(source_ids={"semantic_scholar": "abc"}), max_per_list=room, secrets={}
        )
        if r.relation is relation
    ]
    return request


def openalex_work(room: int = 1000) -> LinkRequest:
    ids = PaperIds(source_ids={"openalex": "W2741809807"})
    (request,) = first_link_requests(OPENALEX, ids, max_per_list=room, secrets=SECRETS)
    return request


def shared_openalex(name: str) -> Path:
    return realworld_dir() / "api" / "openalex" / name


# -- Semantic Scholar --------------------------------------------------------------------------


def test_semantic_scholar_asks_for_both_lists_by_its_own_id_else_an_identifier() -> None:
    requests = first_link_requests(
        S2, PaperIds(doi="10.1/x", source_ids={"openalex": "W1"}), max_per_list=250, secrets=SECRETS
    )

    assert [urlsplit(r.page.url).path for r in requests] == [
        "/graph/v1/paper/DOI:10.1/x/references",
        "/graph/v1/paper/DOI:10.1/x/citations",
    ]
    for request in requests:
        assert urlsplit(request.page.url).hostname == "api.semanticscholar.org"
        assert params(request) | {"fields": ""} == {"fields": "", "offset": "0", "limit": "250"}
        assert "abstract" in params(request)["fields"].split(",")
        assert request.page.headers == (("x-api-key", "k-s2"),)
    own = first_link_requests(
        S2,
        PaperIds(doi="10.1/x", source_ids={"semantic_scholar": "f00"}),
        max_per_list=5000,
        secrets={},
    )
    assert "/paper/f00/references" in own[0].page.url and params(own[0])["limit"] == "1000"
    assert own[0].page.headers == ()  # no key, no header
    assert first_link_requests(S2, PaperIds(), max_per_list=10, secrets={}) == ()


def test_a_real_citations_page_reads_into_its_citing_papers_and_the_next_page() -> None:
    body = S2_CITATIONS.read_bytes()
    entries = json.loads(body)["data"]

    page = read_links(S2, s2_list(Relation.CITATIONS), body)

    assert page.outcome is Outcome.OK and len(page.papers) == len(entries) == 100
    assert page.papers[0].title == (
        "We\u2019ve got you covered! The effect of public health insurance on rural "
        "entrepreneurship in China"
    )
    assert page.papers[0].url == (
        "https://www.semanticscholar.org/paper/344e7fb2000d9063cbc9deb550e46946bafe3c90"
    )
    for paper, entry in zip(page.papers, entries, strict=True):
        citing = entry["citingPaper"]
        assert paper.source_id == citing["paperId"]
        assert paper.title == " ".join(citing["title"].split())
        assert paper.url == f"https://www.semanticscholar.org/paper/{citing['paperId']}"
        assert (paper.doi, paper.year, paper.authors, paper.abstract) == (None, None, (), None)
    (following,) = page.following
    assert (params(following)["offset"], params(following)["limit"]) == ("100", "900")
    assert (following.room, following.page_number, following.relation) == (
        900,
        2,
        Relation.CITATIONS,
    )
    # The room is spent: no next page however much the API has.
    assert read_links(S2, s2_list(Relation.CITATIONS, room=100), body).following == ()


def test_semantic_scholar_drops_references_it_could_not_resolve() -> None:
    body = json.dumps(
        {
            "offset": 0,
            "data": [
                {"citedPaper": {"paperId": None, "title": "A reference without a record"}},
                {
                    "citedPaper": {
                        "paperId": "e1",
                        "title": "Known",
                        "year": 2020,
                        "externalIds": {"DOI": "10.5555/K", "ArXiv": "2001.1"},
                    }
                },
            ],
        }
    ).encode()

    page = read_links(S2, s2_list(Relation.REFERENCES), body)

    (paper,) = page.papers
    assert (paper.source_id, paper.doi, paper.arxiv_id, paper.year) == (
        "e1",
        "10.5555/k",
        "2001.1",
        2020,
    )
    assert page.dropped == {"unresolved": 1} and page.following == ()


@pytest.mark.parametrize(
    ("path", "relation", "detail"),
    [
        # The citing side read as references: another list's entries.
        (S2_CITATIONS, Relation.REFERENCES, "data: the records have citingPaper"),
        (
            PROJECT_DIR / "api/semantic_scholar/s2py-search-last-page-total89-2024-12.json",
            Relation.CITATIONS,
            "data: the records have paperId, title",
        ),
        (
            PROJECT_DIR / "api/semantic_scholar/s2py-paper-single-2024-12.json",
            Relation.CITATIONS,
            "the body is a single paper",
        ),
    ],
)
def test_another_semantic_scholar_answer_is_layout_changed(
    path: Path, relation: Relation, detail: str
) -> None:
    page = read_links(S2, s2_list(relation), path.read_bytes())

    assert page.outcome is Outcome.LAYOUT_CHANGED and page.papers == ()
    assert page.detail.startswith("expected data (a list of {citedPaper")
    assert detail in page.detail


def test_errors_and_blocks_are_said_as_such() -> None:
    not_found = PROJECT_DIR / "api/semantic_scholar/s2py-paper-not-found-http404-2024-12.json"

    missing = read_links(S2, s2_list(Relation.CITATIONS), not_found.read_bytes(), status=404)
    limited = read_links(S2, s2_list(Relation.CITATIONS), b'{"message": "slow"}', status=429)
    cut = read_links(OPENALEX, openalex_work(), b'{"id": "https://openalex.org/W1", "refe')

    assert (missing.outcome, missing.detail) == (
        Outcome.ERROR,
        "HTTP 404: Semantic Scholar error: Paper with id 0 not found",
    )
    assert limited.outcome is Outcome.RATE_LIMITED and limited.blocked
    assert cut.outcome is Outcome.ERROR and "not JSON" in cut.detail


# -- OpenAlex ----------------------------------------------------------------------------------


def test_openalex_asks_for_the_work_by_its_id_else_an_identifier() -> None:
    (by_id,) = first_link_requests(
        OPENALEX,
        PaperIds(doi="10.1/x", source_ids={"openalex": "W9"}),
        max_per_list=5,
        secrets=SECRETS,
    )
    (by_doi,) = first_link_requests(OPENALEX, PaperIds(doi="10.1/x"), max_per_list=5, secrets={})
    (by_arxiv,) = first_link_requests(
        OPENALEX, PaperIds(arxiv_id="2401.00010"), max_per_list=5, secrets={}
    )

    assert urlsplit(by_id.page.url).path == "/works/W9"
    assert params(by_id) == {
        "select": "id,referenced_works,cited_by_count",
        "api_key": "k-oa",
        "mailto": "me@example.org",
    }
    assert (by_id.step, by_id.relations) == (
        LinkStep.WORK,
        (Relation.REFERENCES, Relation.CITATIONS),
    )
    assert (
        urlsplit(by_doi.page.url).path == "/works/doi:10.1/x" and "api_key" not in by_doi.page.url
    )
    assert urlsplit(by_arxiv.page.url).path == "/works/doi:10.48550/arxiv.2401.00010"


def test_a_real_work_names_its_references_for_lookup_and_leads_to_its_citations() -> None:
    body = shared_openalex("openalex_work_W2741809807_single.json").read_bytes()
    work = json.loads(body)
    referenced = [ref.removeprefix("https://openalex.org/") for ref in work["referenced_works"]]

    page = read_links(OPENALEX, openalex_work(), body, secrets=SECRETS)

    assert page.outcome is Outcome.OK and page.papers == () and len(referenced) == 45
    lookup, cites = page.following
    assert (lookup.step, lookup.relation, lookup.asked, lookup.room) == (
        LinkStep.LOOKUP,
        Relation.REFERENCES,
        45,
        45,
    )
    assert params(lookup)["filter"] == "openalex:" + "|".join(referenced)
    assert params(lookup)["per-page"] == "45" and params(lookup)["api_key"] == "k-oa"
    assert "abstract_inverted_index" in params(lookup)["select"]
    assert (cites.step, cites.relation, cites.room) == (LinkStep.LIST, Relation.CITATIONS, 1000)
    assert params(cites) | {"select": ""} == {
        "filter": "cites:W2741809807",
        "per-page": "100",
        "page": "1",
        "select": "",
        "api_key": "k-oa",
        "mailto": "me@example.org",
    }
    # At most `room` references are looked up, 100 at a time.
    (short, _) = read_links(OPENALEX, openalex_work(room=10), body).following
    assert params(short)["filter"] == "openalex:" + "|".join(referenced[:10])


def test_a_work_nobody_cites_costs_no_citations_request() -> None:
    body = json.dumps(
        {"id": "https://openalex.org/W5", "referenced_works": [], "cited_by_count": 0}
    ).encode()

    assert read_links(OPENALEX, openalex_work(), body).following == ()


def cites_page(room: int = 1000) -> LinkRequest:
    page = PageRequest(url="https://api.openalex.org/works?filter=cites%3AW1&per-page=100&page=1")
    return LinkRequest(page, LinkStep.LIST, (Relation.CITATIONS,), room=room)


def test_a_real_works_list_reads_each_work_field_by_field() -> None:
    body = shared_openalex("openalex_works_search_ml_public_health_per_page200.json").read_bytes()
    works = json.loads(body)["results"]

    page = read_links(OPENALEX, cites_page(), body)

    assert page.outcome is Outcome.OK and len(page.papers) == len(works) == 49
    assert page.papers[0].title == (
        "Redefining climate regions in the United States of America using satellite remote "
        "sensing and machine learning for public health applications"
    )
    for paper, work in zip(page.papers, works, strict=True):
        assert paper.source_id == work["id"].removeprefix("https://openalex.org/")
        assert paper.title == " ".join(work["title"].split())
        assert paper.year == work["publication_year"]
        assert paper.doi == ((work["doi"] or "").removeprefix("https://doi.org/").lower() or None)
        assert paper.abstract == abstract_text(work["abstract_inverted_index"])
        assert paper.authors == tuple(
            a["author"]["display_name"] for a in work["authorships"] if a["author"]["display_name"]
        )
    # meta: count 49 on one page of 200; nothing follows.
    assert page.following == ()
    assert len(read_links(OPENALEX, cites_page(room=10), body).papers) == 10


def test_a_works_list_pages_on_while_its_meta_says_more_remain_and_room_is_left() -> None:
    def answer(count: int, page: int) -> bytes:
        works = [
            {"id": f"https://openalex.org/W{page}{i}", "title": f"Work {i}"} for i in range(100)
        ]
        return json.dumps(
            {"meta": {"count": count, "page": page, "per_page": 100}, "results": works}
        ).encode()

    first = read_links(OPENALEX, cites_page(room=250), answer(962, 1))
    (second,) = first.following
    third = read_links(OPENALEX, second, answer(962, 2)).following[0]
    last = read_links(OPENALEX, third, answer(962, 3))

    assert (params(second)["page"], params(second)["per-page"], second.room) == ("2", "100", 150)
    assert len(last.papers) == 50 and last.following == ()  # 250 read: the room is spent
    assert read_links(OPENALEX, cites_page(), answer(100, 1)).following == ()


@pytest.mark.parametrize(
    ("name", "step", "detail"),
    [
        (
            "oapy-author-single-A5023888391-2025-06.json",
            LinkStep.WORK,
            "the body is https://openalex.org/A",
        ),
        (
            "oapy-source-single-S137773608-2025-06.json",
            LinkStep.LIST,
            "the body is https://openalex.org/S",
        ),
    ],
)
def test_another_openalex_entity_is_layout_changed(name: str, step: LinkStep, detail: str) -> None:
    body = (PROJECT_DIR / "api/openalex" / name).read_bytes()
    request = openalex_work() if step is LinkStep.WORK else cites_page()

    page = read_links(OPENALEX, request, body)

    assert page.outcome is Outcome.LAYOUT_CHANGED and detail in page.detail


def test_a_lookup_says_how_many_referenced_works_openalex_no_longer_serves() -> None:
    asked = LinkRequest(
        PageRequest(url="https://api.openalex.org/works?filter=openalex%3AW1%7CW2%7CW3"),
        LinkStep.LOOKUP,
        (Relation.REFERENCES,),
        room=3,
        asked=3,
    )
    body: dict[str, Any] = {
        "meta": {"count": 2, "page": 1, "per_page": 3},
        "results": [
            {"id": "https://openalex.org/W1", "title": "One"},
            {"id": "https://openalex.org/W3", "title": "Three"},
        ],
    }

    page = read_links(OPENALEX, asked, json.dumps(body).encode())

    assert [paper.source_id for paper in page.papers] == ["W1", "W3"]
    assert page.dropped == {"unresolved": 1} and page.following == ()
