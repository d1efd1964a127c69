"""Fast paths give what the general code gives: ASCII tokenizing, identifier pre-checks."""

from __future__ import annotations

import unicodedata
from itertools import groupby

from hypothesis import given, settings
from hypothesis import strategies as st

from lyra_crawl.paging import relevance
from lyra_crawl.papers import identifiers


def general_tokenize(text: str) -> list[str]:
    """tokenize without its ASCII shortcut."""
    tokens: list[str] = []
    folded = unicodedata.normalize("NFKC", text).casefold()
    for kind, chars in groupby(folded, key=relevance._char_class):
        run = "".join(chars)
        if kind == relevance._WORD:
            tokens.append(run)
        elif kind == relevance._CJK:
            tokens.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return tokens


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_text_tokenizes_as_the_general_path_does(text):
    assert relevance.tokenize(text) == general_tokenize(text)


PIECES = st.sampled_from(
    [
        "arxiv", "ArXiv:", "arxiv.org/abs/", "10.48550/arXiv.", "hep-th/", "/9901001", "2101.00001",
        "v2", "pubmed.ncbi.nlm.nih.gov/", "PMID: ", "europepmc.org/abstract/MED/", "12345678",
        "10.1000/xyz", "10.", "doi.org/", " ", "/", "x", "%2F", "İ", "K", "٣", "PMıD: ", "ARXİV:",
        "EuropePMC.org/abstract/MED/", "PubMed.ncbi.nlm.nih.gov/",
    ]
)  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.lists(PIECES, max_size=8).map("".join))
def test_identifier_searches_find_what_the_full_patterns_find(text):
    decoded = identifiers.unquote(text)
    arxiv = identifiers._ARXIV_IN_TEXT.search(decoded) or identifiers._OLD_ARXIV_IN_TEXT.search(
        decoded
    )
    expected_arxiv = identifiers._arxiv_from_match(arxiv) if arxiv else None
    assert identifiers.extract_arxiv_id(text) == expected_arxiv
    pmid = identifiers._PMID_IN_TEXT.search(text)
    expected_pmid = str(int(pmid.group(1))) if pmid and int(pmid.group(1)) else None
    assert identifiers.extract_pmid(text) == expected_pmid
    dois = identifiers._DOI_IN_TEXT.finditer(decoded)
    expected = [identifiers._clean_doi(m.group(0), identifiers._DOI_EXACT) for m in dois]
    assert list(identifiers._iter_dois(text)) == [doi for doi in expected if doi is not None]
