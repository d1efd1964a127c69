"""Parse one fetched page into results plus its outcome: the single entry point. Pure.

HTML engines are read by their XPath rules (html.py); API engines by the module their spec's
`parser` names. Either way the outcome is decided here, in one order: block markers, HTTP
errors, error documents, a page number other than the one asked for, then results or empty.
"""

from __future__ import annotations

from collections.abc import Callable

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines import (
    arxiv,
    crossref,
    html,
    mediawiki,
    openalex,
    pubmed,
    qwant,
    semantic_scholar,
)
from lyra_crawl.engines.base import Extracted, Outcome, ParseResult
from lyra_crawl.engines.blocks import detect_block
from lyra_crawl.engines.request import ensure_engine_host

Extractor = Callable[[EngineSpec, bytes, int, str], Extracted]
# One entry per name in config.PARSER_HOOKS (tests/test_conformance.py checks they agree).
HOOKS: dict[str, Extractor] = {
    "qwant": qwant.extract,
    "wikipedia": mediawiki.wikipedia,
    "wikidata": mediawiki.wikidata,
    "arxiv": arxiv.extract,
    "pubmed": pubmed.extract,
    "semantic_scholar": semantic_scholar.extract,
    "openalex": openalex.extract,
    "crossref": crossref.extract,
}


def parse_page(
    spec: EngineSpec, body: bytes, page_number: int, *, status: int = 200, url: str = ""
) -> ParseResult:
    """Turn one fetched page into results plus its outcome."""
    text = body.decode("utf-8", errors="replace")
    doc = html.parse_document(body) if spec.family == "html" else None
    block = detect_block(spec, text, status, url, doc)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    if spec.family == "html":
        if status >= 400:
            return ParseResult(outcome=Outcome.ERROR, detail=f"HTTP {status}")
        if doc is None:
            return ParseResult(outcome=Outcome.EMPTY, detail="empty body")
        found = html.extract(spec, doc, page_number)
    else:
        found = HOOKS[spec.parser or ""](spec, body, page_number, url)
        if status >= 400:
            # An API's error document says more than its status; results never count.
            detail = f"HTTP {status}: {found.error}" if found.error else f"HTTP {status}"
            return ParseResult(outcome=Outcome.ERROR, detail=detail)
    return _judge(spec, found, page_number)


def _judge(spec: EngineSpec, found: Extracted, page_number: int) -> ParseResult:
    if found.block is not None:
        return ParseResult(outcome=found.block, detail=found.error)
    if found.error:
        return ParseResult(outcome=Outcome.ERROR, detail=found.error)
    if found.shown_page is not None and found.shown_page != page_number:
        return ParseResult(
            outcome=Outcome.SOFT_BLOCK,
            detail=f"asked for page {page_number}, the engine answered with page "
            f"{found.shown_page}",
        )
    for request in (found.next_request, found.follow_up):
        if request is not None:
            ensure_engine_host(spec, request.url)
    if not found.results:
        return ParseResult(
            outcome=Outcome.EMPTY, detail="no results on page", dropped=found.dropped
        )
    return ParseResult(
        outcome=Outcome.OK,
        results=found.results,
        next_request=found.next_request,
        follow_up=found.follow_up,
        dropped=found.dropped,
    )


def parse_token_page(
    spec: EngineSpec, body: bytes, *, status: int = 200, url: str = ""
) -> ParseResult:
    """Read the fields a token page (Startpage's home page) hands to page 1."""
    doc = html.parse_document(body)
    block = detect_block(spec, body.decode("utf-8", errors="replace"), status, url, doc)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    if status >= 400 or doc is None:
        return ParseResult(outcome=Outcome.ERROR, detail=f"token page answered HTTP {status}")
    tokens = html.form_fields(doc, spec.token_fields)
    missing = [name for name in spec.token_fields if name not in tokens]
    if missing:
        return ParseResult(
            outcome=Outcome.ERROR, detail=f"token page has no {', '.join(missing)} field"
        )
    return ParseResult(outcome=Outcome.OK, tokens=tuple(tokens.items()))
