"""Query text handling shared by the spider, the cache and storage. Pure."""

from __future__ import annotations

import unicodedata


def normalize_query(text: str) -> str:
    """The comparable form of a query: NFKC, case-folded, whitespace folded."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())
