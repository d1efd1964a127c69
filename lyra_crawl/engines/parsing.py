"""Parse one fetched page into results plus its outcome. Pure."""

from __future__ import annotations

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines import html
from lyra_crawl.engines.base import Outcome, ParseResult
from lyra_crawl.engines.blocks import detect_block
from lyra_crawl.engines.request import ensure_engine_host


def parse_page(
    spec: EngineSpec, body: bytes, page_number: int, *, status: int = 200, url: str = ""
) -> ParseResult:
    """Turn one fetched page into results plus its outcome."""
    text = body.decode("utf-8", errors="replace")
    block = detect_block(spec, text, status, url)
    if block is not None:
        return ParseResult(outcome=block[0], detail=block[1])
    if status >= 400:
        return ParseResult(outcome=Outcome.ERROR, detail=f"HTTP {status}")
    if spec.family != "html":
        return ParseResult(outcome=Outcome.ERROR, detail=f"no parser yet for family {spec.family}")
    doc = html.parse_document(body)
    if doc is None:
        return ParseResult(outcome=Outcome.EMPTY, detail="empty body")
    dropped: dict[str, int] = {}
    results = tuple(html.extract_results(spec, doc, dropped))
    next_request = html.next_page_form(spec, doc) if spec.next_page == "form" else None
    if next_request is not None:
        ensure_engine_host(spec, next_request.url)
    if not results:
        return ParseResult(outcome=Outcome.EMPTY, detail="no results on page", dropped=dropped)
    return ParseResult(
        outcome=Outcome.OK, results=results, next_request=next_request, dropped=dropped
    )
