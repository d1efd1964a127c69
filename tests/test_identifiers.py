"""DOI, arXiv id and PMID extraction and normalisation."""

from __future__ import annotations

import string
from urllib.parse import quote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from lyra_crawl.papers.identifiers import (
    Identifiers,
    arxiv_id_from_doi,
    extract_arxiv_id,
    extract_doi,
    extract_pmid,
    identifiers_from,
    normalize_arxiv_id,
    normalize_doi,
    normalize_pmid,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("10.1145/3292500.3330701", "10.1145/3292500.3330701"),
        ("https://doi.org/10.1145/3292500.3330701", "10.1145/3292500.3330701"),
        ("http://dx.doi.org/10.1000/ABC.Def", "10.1000/abc.def"),
        ("https://www.doi.org/10.1000/abc", "10.1000/abc"),
        ("doi:10.1000/xyz", "10.1000/xyz"),
        ("DOI: 10.1000/xyz", "10.1000/xyz"),
        ("https://doi.org/10.1000%2Fabc%3A123", "10.1000/abc:123"),
        ("10.1000/xyz.", "10.1000/xyz"),
        ("10.1000/xyz;", "10.1000/xyz"),
        ("  10.1000/xyz/  ", "10.1000/xyz"),
        ("https://doi.org/10.1002/asi.24235/full", "10.1002/asi.24235"),
        ("10.1002/asi.24235/abstract", "10.1002/asi.24235"),
        ("10.1002/asi.24235/pdf", "10.1002/asi.24235"),
        ("10.1111/j.1365-2648.2012.06023.x/epdf", "10.1111/j.1365-2648.2012.06023.x"),
        ("10.1007/s11192-020-03690-4.pdf", "10.1007/s11192-020-03690-4"),
        (
            "10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-0",
            "10.1002/(sici)1097-4571(199806)49:8<693::aid-asi4>3.0.co;2-0",
        ),
        ("https://doi.org/10.48550/arXiv.1706.03762", "10.48550/arxiv.1706.03762"),
    ],
)
def test_normalize_doi(raw: str, expected: str) -> None:
    assert normalize_doi(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [None, "", "not a doi", "10.12/abc", "11.1000/abc", "https://example.org/10.1000", "10.1000/"],
)
def test_normalize_doi_rejects_non_dois(raw: str | None) -> None:
    assert normalize_doi(raw) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://dl.acm.org/doi/pdf/10.1145/3292500.3330701", "10.1145/3292500.3330701"),
        ("https://dl.acm.org/doi/abs/10.1145/3292500.3330701", "10.1145/3292500.3330701"),
        ("https://onlinelibrary.wiley.com/doi/full/10.1002/asi.24235", "10.1002/asi.24235"),
        ("https://onlinelibrary.wiley.com/doi/epdf/10.1002/ASI.24235", "10.1002/asi.24235"),
        (
            "https://link.springer.com/content/pdf/10.1007/s11192-020-03690-4.pdf",
            "10.1007/s11192-020-03690-4",
        ),
        (
            "https://journals.plos.org/plosone/article?id=10.1371/journal.pone.0000001&type=pdf",
            "10.1371/journal.pone.0000001",
        ),
        ("https://example.org/doi/10.1000%2Fabc%2Fdef", "10.1000/abc/def"),
        ("Published in Nature (doi:10.1038/nature14539).", "10.1038/nature14539"),
        ("see https://doi.org/10.1000/abc, and 10.1000/second", "10.1000/abc"),
        ("<b>10.1000/abc</b> in bold", "10.1000/abc"),
        (
            "https://www.biorxiv.org/content/10.1101/2020.01.01.123456v2.full.pdf",
            "10.1101/2020.01.01.123456",
        ),
    ],
)
def test_extract_doi(text: str, expected: str) -> None:
    assert extract_doi(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "Costs rose by 10.5 percent/year in 2019",
        "version 10.2/3 of the spec",
        "https://example.org/papers/10.html",
        "arXiv:2101.00001",
    ],
)
def test_extract_doi_finds_no_false_doi(text: str | None) -> None:
    assert extract_doi(text) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2101.00001", "2101.00001"),
        ("2101.00001v2", "2101.00001"),
        ("1706.03762", "1706.03762"),
        ("0704.0001", "0704.0001"),
        ("arXiv:1706.03762v5", "1706.03762"),
        ("https://arxiv.org/abs/2101.00001v2", "2101.00001"),
        ("https://arxiv.org/pdf/2101.00001v1.pdf", "2101.00001"),
        ("http://arxiv.org/pdf/2101.00001", "2101.00001"),
        ("https://export.arxiv.org/abs/2101.00001", "2101.00001"),
        ("hep-th/9901001", "hep-th/9901001"),
        ("hep-th/9901001v3", "hep-th/9901001"),
        ("https://arxiv.org/abs/hep-th/9901001", "hep-th/9901001"),
        ("https://arxiv.org/pdf/cond-mat/0207270v1.pdf", "cond-mat/0207270"),
        ("arxiv.org/abs/hep-th%2F9901001", "hep-th/9901001"),
        ("math.GT/0309136", "math/0309136"),
        ("10.48550/arXiv.1706.03762", "1706.03762"),
        ("https://doi.org/10.48550/arXiv.2101.00001", "2101.00001"),
    ],
)
def test_normalize_arxiv_id(raw: str, expected: str) -> None:
    assert normalize_arxiv_id(raw) == expected


@pytest.mark.parametrize("raw", [None, "", "2113.00001", "21.00001", "foo/9901001", "hello"])
def test_normalize_arxiv_id_rejects_non_ids(raw: str | None) -> None:
    assert normalize_arxiv_id(raw) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Preprint at https://arxiv.org/abs/2101.00001v3 (2021)", "2101.00001"),
        ("Vaswani et al., arXiv: 1706.03762, 2017", "1706.03762"),
        ("see hep-th/9901001 for details", "hep-th/9901001"),
        ("https://doi.org/10.48550/arXiv.1706.03762", "1706.03762"),
        ("ARXIV:1706.03762 — Ünïcode around it", "1706.03762"),
        ("ARXİV:1706.03762", "1706.03762"),  # a dotted capital I folds to i for the regex
    ],
)
def test_extract_arxiv_id(text: str, expected: str) -> None:
    assert extract_arxiv_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Released 2101.00001 units",  # a bare new-style id needs arXiv context
        "https://example.org/abs/2101.00001",
        "path/hep-th/9901001",
        "arxiv.org/abs/2113.00001",  # month 13
    ],
)
def test_extract_arxiv_id_needs_context(text: str) -> None:
    assert extract_arxiv_id(text) is None


def test_arxiv_id_from_doi() -> None:
    assert arxiv_id_from_doi("10.48550/arxiv.2101.00001") == "2101.00001"
    assert arxiv_id_from_doi("10.1145/3292500.3330701") is None
    assert arxiv_id_from_doi(None) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://pubmed.ncbi.nlm.nih.gov/31452104/", "31452104"),
        ("https://pubmed.ncbi.nlm.nih.gov/123", "123"),
        ("https://www.ncbi.nlm.nih.gov/pubmed/31452104", "31452104"),
        ("http://www.ncbi.nlm.nih.gov/pubmed/31452104?dopt=Abstract", "31452104"),
        ("https://europepmc.org/article/MED/31452104", "31452104"),
        ("Epub 2019. PMID: 31452104", "31452104"),
        ("Epub 2019. Pmid: 31452104", "31452104"),
        ("https://EuropePMC.org/abstract/MED/31452104", "31452104"),
        ("Résumé. PMıD: 31452104", "31452104"),  # a dotless i folds to i for the regex
    ],
)
def test_extract_pmid(text: str, expected: str) -> None:
    assert extract_pmid(text) == expected


@pytest.mark.parametrize(
    "text", [None, "", "31452104", "page 31452104", "https://example.org/pubmed/x"]
)
def test_extract_pmid_ignores_bare_numbers(text: str | None) -> None:
    assert extract_pmid(text) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("31452104", "31452104"),  # Semantic Scholar externalIds.PubMed
        (" 0031452104 ", "31452104"),
        ("https://pubmed.ncbi.nlm.nih.gov/31452104", "31452104"),  # OpenAlex ids.pmid
        ("0", None),
        ("12a", None),
        (None, None),
    ],
)
def test_normalize_pmid(raw: str | None, expected: str | None) -> None:
    assert normalize_pmid(raw) == expected


def test_identifiers_from_takes_first_hit_of_each_kind() -> None:
    found = identifiers_from(
        "https://pubmed.ncbi.nlm.nih.gov/31452104/",
        "doi:10.1000/first and arXiv:2101.00001",
        "doi:10.1000/second arXiv:2202.00002 PMID: 999",
    )
    assert found == Identifiers(doi="10.1000/first", arxiv_id="2101.00001", pmid="31452104")


def test_identifiers_from_fills_arxiv_id_from_arxiv_doi() -> None:
    found = identifiers_from("https://doi.org/10.48550/arXiv.1706.03762", None, "")
    assert found == Identifiers(doi="10.48550/arxiv.1706.03762", arxiv_id="1706.03762")


def test_identifiers_from_prefers_journal_doi_over_arxiv_doi() -> None:
    found = identifiers_from(
        "https://doi.org/10.48550/arXiv.1706.03762", "Published as doi:10.5555/3295222.3295349"
    )
    assert found.doi == "10.5555/3295222.3295349"
    assert found.arxiv_id == "1706.03762"


def test_identifiers_from_nothing() -> None:
    assert identifiers_from(None, "", "A plain title about 10.5 things") == Identifiers()


_DOI_SUFFIX = st.text(alphabet=string.ascii_letters + string.digits + "-._;()/:", min_size=1)


@given(prefix=st.integers(min_value=1000, max_value=999_999_999), suffix=_DOI_SUFFIX)
def test_normalize_doi_is_idempotent_and_prefix_blind(prefix: int, suffix: str) -> None:
    doi = normalize_doi(f"10.{prefix}/{suffix}")
    assume(doi is not None)
    assert normalize_doi(doi) == doi
    assert normalize_doi(f"https://doi.org/{quote(doi, safe='')}") == doi
    assert extract_doi(f"Available at https://doi.org/{doi} today") == doi
