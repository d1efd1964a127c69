"""A paper's citation links at the APIs that serve them: requests and answers. Pure.

A paper's links at one API are two lists: its references (the papers it cites) and its
citations (the papers citing it). Each API's module (semantic_scholar_citations,
openalex_citations) builds a paper's first requests from the ids the API may know it by, and
reads each answer into the papers at the other end plus the requests that follow (the list's
next page; OpenAlex's lookups of the works a work references). `read_links` judges an answer as
`parsing.parse_page` judges a results page, in the same order: block markers, HTTP errors and
the API's error documents, another shape than the one expected (`layout_changed`), then the
papers, vetted like results.
"""

from __future__ import annotations

from collections.abc import Mapping

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines import openalex_citations, semantic_scholar_citations
from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.blocks import detect_block
from lyra_crawl.engines.citation_links import (
    LinkApi,
    LinkPage,
    LinkRequest,
    PaperIds,
)
from lyra_crawl.engines.parsing import SHAPE_ERRORS, vet_results

# The modules that read each API's links, by the engine's `parser`.
LINK_APIS: Mapping[str, LinkApi] = {
    "semantic_scholar": semantic_scholar_citations,
    "openalex": openalex_citations,
}


def link_api(spec: EngineSpec) -> LinkApi | None:
    """The module that reads `spec`'s citation links; None for an engine that serves none."""
    return LINK_APIS.get(spec.parser or "")


def first_link_requests(
    spec: EngineSpec, ids: PaperIds, *, max_per_list: int, secrets: Mapping[str, str]
) -> tuple[LinkRequest, ...]:
    """The requests that start a paper's references and citations at `spec`'s API; none when
    the API serves no links or knows the paper by none of `ids`."""
    api = link_api(spec)
    if api is None:
        return ()
    return api.first_requests(spec, ids, max_per_list=max_per_list, secrets=secrets)


def read_links(
    spec: EngineSpec,
    request: LinkRequest,
    body: bytes,
    *,
    status: int = 200,
    url: str = "",
    secrets: Mapping[str, str] | None = None,
) -> LinkPage:
    """Judge one answer to a citation request."""
    block = detect_block(spec, body, status, url)
    if block is not None:
        return LinkPage(outcome=block[0], detail=block[1])
    api = link_api(spec)
    if api is None:
        raise ValueError(f"engine '{spec.name}' serves no citation links")
    try:
        found = api.read(spec, request, body, secrets=secrets or {})
    except SHAPE_ERRORS as exc:
        detail = f"{spec.name} answered in a shape its citation reader does not read ({exc!r:.200})"
        return LinkPage(outcome=Outcome.LAYOUT_CHANGED, detail=detail)
    if status >= 400:
        detail = f"HTTP {status}: {found.error}" if found.error else f"HTTP {status}"
        return LinkPage(outcome=Outcome.ERROR, detail=detail)
    if found.error:
        return LinkPage(outcome=Outcome.ERROR, detail=found.error)
    if found.layout_changed:
        return LinkPage(outcome=Outcome.LAYOUT_CHANGED, detail=found.layout_changed)
    papers, dropped = vet_results(found.papers)
    for reason, count in found.dropped.items():
        dropped[reason] = dropped.get(reason, 0) + count
    return LinkPage(outcome=Outcome.OK, papers=papers, following=found.following, dropped=dropped)
