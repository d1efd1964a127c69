"""DOI / arXiv id / PMID normalisation, for ids as the scholarly APIs hand them over. Pure.

DOIs are case-insensitive by definition (DOI Handbook 2.4), so they are kept lower-case and
without any resolver prefix: `https://doi.org/10.1/ABC` and `doi:10.1/abc` are one DOI.
"""

from __future__ import annotations

import re

_DOI_PREFIX_RE = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", re.IGNORECASE)
_PMID_URL_RE = re.compile(
    r"^https?://(?:pubmed\.ncbi\.nlm\.nih\.gov|www\.ncbi\.nlm\.nih\.gov/pubmed)/(\d+)/?$"
)
# arXiv's own DataCite DOIs (registered since 2022) carry the arXiv id.
ARXIV_DOI_PREFIX = "10.48550/arxiv."


def normalize_doi(value: str | None) -> str | None:
    """The bare, lower-case DOI (`10.xxxx/...`), or None when `value` is not one."""
    doi = _DOI_PREFIX_RE.sub("", (value or "").strip()).lower()
    return doi if doi.startswith("10.") and "/" in doi else None


def arxiv_id_from_doi(doi: str | None) -> str | None:
    """The arXiv id an arXiv DOI (10.48550/arXiv.<id>) carries, or None."""
    if doi and doi.startswith(ARXIV_DOI_PREFIX):
        return doi[len(ARXIV_DOI_PREFIX) :]
    return None


def pmid_from_url(value: str | None) -> str | None:
    """The PMID of a PubMed URL (OpenAlex's `ids.pmid`), or of a bare number."""
    text = (value or "").strip()
    if text.isdigit():
        return text
    match = _PMID_URL_RE.match(text)
    return match.group(1) if match else None
