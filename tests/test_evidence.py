"""A paper's evidence: its abstract, or the best URL to fetch it from and why."""

from __future__ import annotations

from typing import Any

import pytest

from lyra_crawl.papers.canonical import PaperRecord
from lyra_crawl.papers.evidence import FETCH_KINDS, decide_evidence, fetch_urls, merge_fetch_urls


def record(url: str, kind: str = "api", **fields: Any) -> PaperRecord:
    return PaperRecord(source="x", title="T", url=url, kind=kind, **fields)  # type: ignore[arg-type]


def test_an_abstract_of_the_configured_length_is_the_evidence() -> None:
    assert decide_evidence("w " * 100, {}, min_abstract_chars=199).evidence == "abstract"


@pytest.mark.parametrize(
    ("abstract", "reason"),
    [
        (None, "no abstract"),
        ("   ", "no abstract"),
        ("Short  and\nsweet.", "abstract shorter than 200 chars"),
    ],
)
def test_without_a_long_enough_abstract_the_paper_is_fetched_saying_why(
    abstract: str | None, reason: str
) -> None:
    urls = {"doi": "https://doi.org/10.1/x", "arxiv": "https://arxiv.org/abs/2401.00001"}

    decided = decide_evidence(abstract, urls, min_abstract_chars=200)

    assert (decided.evidence, decided.fetch_url, decided.reason) == (
        "fetch",
        "https://arxiv.org/abs/2401.00001",
        reason,
    )


def test_a_paper_with_nothing_to_fetch_says_so() -> None:
    decided = decide_evidence(None, {}, min_abstract_chars=200)

    assert (decided.evidence, decided.fetch_url) == ("fetch", None)
    assert decided.reason == "no abstract; no URL to fetch"


def test_fetch_urls_are_ranked_pdf_landing_arxiv_doi_pubmed_result() -> None:
    urls = fetch_urls(
        [
            record("https://www.mojeek.com/result", kind="serp"),
            record("https://doi.org/10.1/x"),  # the DOI link is built from the DOI
            record("https://openalex.org/W1"),  # the APIs' own pages are no landing pages
            record("https://www.semanticscholar.org/paper/abc", pdf_url="https://r.org/a.pdf"),
            record("https://journal.org/article/1"),
        ],
        doi="10.1/x",
        arxiv_id="2401.00001",
        pmid="123",
    )

    assert list(urls) == list(FETCH_KINDS)
    assert urls == {
        "pdf": "https://r.org/a.pdf",
        "landing": "https://journal.org/article/1",
        "arxiv": "https://arxiv.org/abs/2401.00001",
        "doi": "https://doi.org/10.1/x",
        "pubmed": "https://pubmed.ncbi.nlm.nih.gov/123/",
        "result": "https://www.mojeek.com/result",
    }


def test_a_later_record_with_a_better_kind_takes_over() -> None:
    stored = {"doi": "https://doi.org/10.1/x"}
    found = {"pdf": "https://r.org/a.pdf", "doi": "https://doi.org/10.1/other"}

    merged = merge_fetch_urls(stored, found)

    assert merged == {"pdf": "https://r.org/a.pdf", "doi": "https://doi.org/10.1/x"}
    assert decide_evidence(None, merged, min_abstract_chars=1).fetch_url == "https://r.org/a.pdf"
