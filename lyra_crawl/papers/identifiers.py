"""DOI, arXiv id and PubMed id (PMID) extraction and normalisation.

Pure functions, no Scrapy imports. ``normalize_*`` take a value that is meant to be one
identifier (an API field, possibly carrying a resolver prefix or URL); ``extract_*`` find the
first identifier inside arbitrary text such as a result URL, snippet or title. Every function
returns the canonical form (DOIs lower-cased, arXiv ids without version) or ``None``.
``identifier_keys`` gives a record's identifiers as the paper merge joins records by them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote

from lyra_crawl.results import ResultFields

__all__ = [
    "ARXIV_DOI_PREFIX",
    "Identifiers",
    "arxiv_id_from_doi",
    "extract_arxiv_id",
    "extract_doi",
    "extract_pmid",
    "identifier_keys",
    "identifiers_from",
    "normalize_arxiv_id",
    "normalize_doi",
    "normalize_pmid",
]

ARXIV_DOI_PREFIX = "10.48550/arxiv."

# Crossref's advice is 10.<4-9 digits>/<suffix>; the suffix stops at whitespace, quotes, angle
# brackets (HTML around a DOI) and URL query/fragment delimiters, which real DOIs avoid.
_DOI_BODY = r"10\.\d{4,9}/[^\s\"'<>?#&\u201c\u201d\u2018\u2019]+"
_DOI_IN_TEXT = re.compile(_DOI_BODY, re.IGNORECASE)
_DOI_EXACT = re.compile(_DOI_BODY + r"\Z", re.IGNORECASE)
# A field that claims to hold a DOI may carry SICI characters such as <> that text search avoids.
_DOI_FIELD = re.compile(r"10\.\d{4,9}/\S+\Z", re.IGNORECASE)
_DOI_PREFIX = re.compile(
    r"^\s*(?:https?://)?(?:dx\.|www\.)?doi\.org/|^\s*doi\s*:\s*|^\s*doi\s+", re.IGNORECASE
)
# Publisher landing pages append a view to the DOI (Wiley /full /abstract /epdf, ACM /pdf,
# Springer .pdf, bioRxiv .full.pdf); none of these are part of a registered DOI.
_DOI_VIEW_SUFFIX = re.compile(
    r"(?:/(?:full|abstract|abs|pdf|epdf|pdfdirect|fulltext|html|summary)|\.(?:pdf|full|abstract))"
    r"/?\Z",
    re.IGNORECASE,
)
_TRAILING_PUNCT = ".,;:!/]}"
# bioRxiv/medRxiv URLs add a version (v2) that the registered 10.1101 DOI does not carry.
_BIORXIV_VERSION = re.compile(r"^(10\.1101/(?:\d{4}\.\d{2}\.\d{2}\.)?\d{6,})v\d+\Z")

# Old-style arXiv archives (before April 2007); a known list keeps "abc/1234567" from matching.
_OLD_ARCHIVES = (
    "acc-phys|adap-org|alg-geom|ao-sci|astro-ph|atom-ph|bayes-an|chao-dyn|chem-ph|cmp-lg|"
    "comp-gas|cond-mat|cs|dg-ga|funct-an|gr-qc|hep-ex|hep-lat|hep-ph|hep-th|math-ph|math|"
    "mtrl-th|nlin|nucl-ex|nucl-th|patt-sol|physics|plasm-ph|q-alg|q-bio|q-fin|quant-ph|"
    "solv-int|stat|supr-con"
)
_NEW_ARXIV_ID = r"(?P<new>\d{2}(?:0[1-9]|1[0-2])\.\d{4,5})"
_OLD_ARXIV_ID = (
    rf"(?P<archive>{_OLD_ARCHIVES})(?:\.[a-z]{{2}})?/(?P<number>\d{{2}}(?:0[1-9]|1[0-2])\d{{3}})"
)
_ARXIV_VERSION = r"(?:v\d+)?"
_ARXIV_EXACT = re.compile(
    rf"^\s*(?:arxiv\s*:\s*)?(?:{_NEW_ARXIV_ID}|{_OLD_ARXIV_ID}){_ARXIV_VERSION}(?:\.pdf)?\s*\Z",
    re.IGNORECASE,
)
# A bare "2101.00001" in free text could be any number, so extraction needs an arXiv context:
# an arxiv.org path, an "arXiv:" label or the DataCite DOI 10.48550/arXiv.<id>. Old-style ids
# are distinctive enough (known archive + YYMMNNN) to be taken bare.
_ARXIV_IN_TEXT = re.compile(
    r"(?:arxiv\.org/(?:abs|pdf|html|format)/|arxiv\s*:\s*|10\.48550/arxiv\.)"
    rf"(?:{_NEW_ARXIV_ID}|{_OLD_ARXIV_ID}){_ARXIV_VERSION}(?!\d)",
    re.IGNORECASE,
)
_OLD_ARXIV_IN_TEXT = re.compile(
    rf"(?<![\w/.-]){_OLD_ARXIV_ID}{_ARXIV_VERSION}(?!\d)", re.IGNORECASE
)

# Cheap tests for what each search needs, run first: most results carry no identifier, and the
# full patterns (the old-style archive list above all) cost far more than a literal search.
_ARXIV_HINT = re.compile("arxiv", re.IGNORECASE)
_ARXIV_WORDS = ("arxiv",)
_OLD_ARXIV_HINT = re.compile(r"/\d{7}")
_PMID_HINT = re.compile("pubmed|europepmc|pmid", re.IGNORECASE)
_PMID_WORDS = ("pubmed", "europepmc", "pmid")

_PMID_IN_TEXT = re.compile(
    r"(?:pubmed\.ncbi\.nlm\.nih\.gov/|ncbi\.nlm\.nih\.gov/pubmed/|europepmc\.org/"
    r"(?:abstract|article)/med/|\bpmid\s*:?\s*)(\d{1,9})(?!\d)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Identifiers:
    """The external identifiers found for one result or record."""

    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None


def normalize_doi(raw: str | None) -> str | None:
    """Canonical lower-case DOI from a bare DOI, ``doi:`` label or doi.org URL; else None."""
    if not raw:
        return None
    value = _DOI_PREFIX.sub("", unquote(raw).strip(), count=1)
    return _clean_doi(value, _DOI_FIELD) if _DOI_FIELD.match(value) else None


def extract_doi(text: str | None) -> str | None:
    """First DOI in free text or a URL (doi.org or publisher landing page), normalised."""
    return next(_iter_dois(text), None)


def arxiv_id_from_doi(doi: str | None) -> str | None:
    """The arXiv id behind an arXiv DataCite DOI (``10.48550/arxiv.<id>``), else None."""
    if doi and doi.lower().startswith(ARXIV_DOI_PREFIX):
        return normalize_arxiv_id(doi[len(ARXIV_DOI_PREFIX) :])
    return None


def normalize_arxiv_id(raw: str | None) -> str | None:
    """Canonical arXiv id without version from an id, ``arXiv:`` label, abs/pdf URL or DOI."""
    if not raw:
        return None
    value = unquote(raw).strip()
    match = _ARXIV_EXACT.match(value)
    if match is None:
        return extract_arxiv_id(value)
    return _arxiv_from_match(match)


def extract_arxiv_id(text: str | None) -> str | None:
    """First arXiv id in free text or a URL, normalised; bare new-style ids need arXiv context."""
    if not text:
        return None
    decoded = unquote(text)
    match = _ARXIV_IN_TEXT.search(decoded) if _hinted(decoded, _ARXIV_HINT, _ARXIV_WORDS) else None
    if match is None and _OLD_ARXIV_HINT.search(decoded):
        match = _OLD_ARXIV_IN_TEXT.search(decoded)
    return _arxiv_from_match(match) if match else None


def normalize_pmid(raw: str | None) -> str | None:
    """Canonical PMID from bare digits (Semantic Scholar) or a PubMed URL (OpenAlex ids.pmid)."""
    if not raw:
        return None
    value = raw.strip()
    if value.isascii() and value.isdigit():
        number = int(value)
        return str(number) if 0 < number < 10**9 else None
    return extract_pmid(value)


def extract_pmid(text: str | None) -> str | None:
    """First PMID in a PubMed / Europe PMC URL or a ``PMID:`` label; bare numbers are ignored."""
    if not text or not _hinted(text, _PMID_HINT, _PMID_WORDS):
        return None
    match = _PMID_IN_TEXT.search(text)
    if match is None or not int(match.group(1)):
        return None
    return str(int(match.group(1)))


def identifiers_from(*texts: str | None) -> Identifiers:
    """Identifiers found across texts (URL, snippet, title…); the first hit of each kind wins.

    An arXiv DataCite DOI fills ``arxiv_id`` and is kept as ``doi`` only when no other DOI is
    found, so a journal DOI in a later text is preferred over the preprint's DOI.
    """
    doi: str | None = None
    arxiv_doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    for text in texts:
        if not text:
            continue
        for found in _iter_dois(text):
            if found.startswith(ARXIV_DOI_PREFIX):
                arxiv_doi = arxiv_doi or found
            elif doi is None:
                doi = found
        arxiv_id = arxiv_id or extract_arxiv_id(text) or arxiv_id_from_doi(arxiv_doi)
        pmid = pmid or extract_pmid(text)
    return Identifiers(doi=doi or arxiv_doi, arxiv_id=arxiv_id, pmid=pmid)


def identifier_keys(record: ResultFields) -> tuple[tuple[str, str], ...]:
    """A record's identifiers as the paper merge joins records by them: (doi|arxiv|pmid,
    normalised value); an arXiv DataCite DOI is the arXiv id it names."""
    if not (record.doi or record.arxiv_id or record.pmid):
        return ()
    return _normalized_identifiers(record.doi, record.arxiv_id, record.pmid)


# A record's identifiers are read again at each step of a save (the crawl's index, its paper, the
# store's index); their normalisation is a few regular expressions. Sized by the batch benchmark:
# 65,536 entries grew a 10,000-query batch's process by ~30 MB; 4,096 missed so often that CPU
# per request rose by a fifth.
@lru_cache(maxsize=1 << 13)
def _normalized_identifiers(
    raw_doi: str | None, raw_arxiv_id: str | None, raw_pmid: str | None
) -> tuple[tuple[str, str], ...]:
    keys: list[tuple[str, str]] = []
    doi = normalize_doi(raw_doi)
    arxiv_from_doi = arxiv_id_from_doi(doi)
    if doi and not arxiv_from_doi:
        keys.append(("doi", doi))
    # The arXiv DataCite DOI and the arXiv id name the same preprint.
    for arxiv_id in {normalize_arxiv_id(raw_arxiv_id), arxiv_from_doi} - {None}:
        keys.append(("arxiv", arxiv_id))
    pmid = normalize_pmid(raw_pmid)
    if pmid:
        keys.append(("pmid", pmid))
    return tuple(keys)


def _hinted(text: str, hint: re.Pattern[str], words: tuple[str, ...]) -> bool:
    """Whether `text` shows one of `hint`'s `words`, in any case.

    ASCII text is lowered and searched, ~8 times faster than the case-blind regex; other text
    keeps the regex, whose case folding goes beyond lower() ("PMıD" with a dotless i).
    """
    if text.isascii():
        lowered = text.lower()
        return any(word in lowered for word in words)
    return hint.search(text) is not None


def _iter_dois(text: str | None) -> Iterator[str]:
    if not text:
        return
    decoded = unquote(text)
    if "10." not in decoded:
        return
    for match in _DOI_IN_TEXT.finditer(decoded):
        doi = _clean_doi(match.group(0), _DOI_EXACT)
        if doi is not None:
            yield doi


def _clean_doi(value: str, pattern: re.Pattern[str]) -> str | None:
    doi = value.strip().lower()
    while True:
        previous = doi
        doi = _DOI_VIEW_SUFFIX.sub("", doi).rstrip(_TRAILING_PUNCT)
        # A closing parenthesis belongs to the DOI only when it closes one opened inside it,
        # as in SICI DOIs such as 10.1002/(sici)1097-4571(199806)49:8.
        if doi.endswith(")") and doi.count(")") > doi.count("("):
            doi = doi[:-1]
        if doi == previous:
            break
    doi = _BIORXIV_VERSION.sub(r"\1", doi)
    return doi if pattern.match(doi) else None


def _arxiv_from_match(match: re.Match[str]) -> str:
    if match.groupdict().get("new"):
        return match.group("new")
    # Old-style ids drop the subject class: math.GT/0309136 is the paper math/0309136.
    return f"{match.group('archive').lower()}/{match.group('number')}"
