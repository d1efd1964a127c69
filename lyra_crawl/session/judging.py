"""Judge a fetched page once: the engine's parser, then whether it repeats the page before it.

Block detection judges every response when it runs and hands the verdict to the spider; with
it switched off the spider judges. Either way through `judge`, so a page is parsed once and a
repeated page is a soft block in both cases. An answer to a citation request is judged for
blocks only (the engine's block markers and statuses): its links are read where they are
stored (lyra_crawl.session.citations). Block detection parses on a thread of its own
(`judge_on_thread`): the parser is a pure function, parsel and lxml release the GIL for much
of their work, so parsing overlaps the reactor's work on a second core.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

from scrapy.http import Response

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Outcome, ParseResult
from lyra_crawl.engines.blocks import detect_block, repeated_page
from lyra_crawl.engines.parsing import parse_fetched
from lyra_crawl.engines.routing import engine_url
from lyra_crawl.session.request_state import RequestKind, RequestState
from lyra_crawl.session.running_query import RunningQuery


def response_engine_url(response: Response, state: RequestState, simulator_url: str | None) -> str:
    """The response's URL on the engine's own host, for parsers that read it."""
    return engine_url(response.url, state.engine_url, state.engine, simulator_url)


def judge(
    spec: EngineSpec,
    response: Response,
    state: RequestState,
    query: RunningQuery,
    simulator_url: str | None,
) -> ParseResult:
    return _after_parse(spec, state, query, _parse(spec, response, state, simulator_url))


async def judge_on_thread(
    spec: EngineSpec,
    response: Response,
    state: RequestState,
    query: RunningQuery,
    simulator_url: str | None,
    parser_thread: Executor,
) -> ParseResult:
    loop = asyncio.get_running_loop()
    parsed = await loop.run_in_executor(parser_thread, _parse, spec, response, state, simulator_url)
    return _after_parse(spec, state, query, parsed)


def _parse(
    spec: EngineSpec, response: Response, state: RequestState, simulator_url: str | None
) -> ParseResult:
    url = response_engine_url(response, state, simulator_url)
    if state.kind is RequestKind.CITATION:
        block = detect_block(spec, response.body, response.status, url)
        if block is None:
            return ParseResult(outcome=Outcome.OK)
        return ParseResult(outcome=block[0], detail=block[1])
    return parse_fetched(
        spec,
        response.body,
        state.page_number,
        status=response.status,
        url=url,
        token_page=state.kind is RequestKind.TOKEN_PAGE,
    )


def _after_parse(
    spec: EngineSpec, state: RequestState, query: RunningQuery, result: ParseResult
) -> ParseResult:
    """A page repeating the previous page of its source is a soft block."""
    if state.kind in (RequestKind.TOKEN_PAGE, RequestKind.CITATION) or result.follow_up:
        return result
    result = repeated_page(query.previous_urls.get(spec.name), result)
    query.previous_urls[spec.name] = tuple(found.url for found in result.results)
    return result
