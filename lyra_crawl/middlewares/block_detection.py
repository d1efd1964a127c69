"""Block detection: recognise CAPTCHA, JS-wall, geo-block, 403 and 429 pages; queue each one.

The page is judged by the engine's own parser (lyra_crawl.engines.parsing.parse_fetched): the
markers of search_parsers.yaml, structural checks (DuckDuckGo's bare home page), and blocks an
API declares in its body (Qwant's DataDome answer). The judgement travels to the spider in the
request's meta (PARSED_META), so each page is parsed once. A block records a row in
`intervention_queue` (status open; `scrapy interventions` lists them), marks the request so
CircuitBreakerMiddleware trips the engine's breaker (with the response's Retry-After, if any),
and is counted under `lyra/<engine>/block/<kind>`. The spider reports the one block only it can
see — a page repeating the previous one — through `record_block`.

Settings: LYRA_BREAKER_ENABLED (it exists to feed the breaker), LYRA_CONFIG_DIR, LYRA_DB_PATH,
LYRA_SIMULATOR_URL (to judge a simulated page by the URL the real engine would show).
"""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector

from lyra_crawl.config import LyraConfig
from lyra_crawl.engines.base import ParseResult
from lyra_crawl.engines.parsing import parse_fetched
from lyra_crawl.engines.routing import engine_url
from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.middlewares.circuit_breaker import BLOCK_META, RETRY_AFTER_META, trip_breaker
from lyra_crawl.storage import Storage

logger = logging.getLogger(__name__)

# The parser's judgement of the response, for the spider; a token page is judged as one.
PARSED_META = "lyra_parsed"
TOKEN_PAGE_META = "lyra_token_page"


def retry_after_s(response: Response) -> float | None:
    """Seconds from a Retry-After header given in seconds; HTTP dates are ignored."""
    value = response.headers.get("Retry-After")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and seconds > 0 else None


class BlockDetectionMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_BREAKER_ENABLED"

    def process_response(self, request: Request, response: Response) -> Response:
        engine = self.engine_of(request)
        if engine is None:
            return response
        spec = self.config.engine(engine)
        url = engine_url(
            response.url,
            request.meta.get("lyra_engine_url", response.url),
            engine,
            self.crawler.settings.get("LYRA_SIMULATOR_URL"),
        )
        result = parse_fetched(
            spec,
            response.body,
            request.meta.get("lyra_page", 1),
            status=response.status,
            url=url,
            token_page=bool(request.meta.get(TOKEN_PAGE_META)),
        )
        request.meta[PARSED_META] = result
        if not result.blocked:
            return response
        request.meta[BLOCK_META] = result.outcome.value
        request.meta[RETRY_AFTER_META] = retry_after_s(response)
        self.count(engine, f"block/{result.outcome.value}")
        record_intervention(
            self.storage, engine, result, url=url, query_id=request.meta.get("lyra_query_id")
        )
        return response


def record_intervention(
    storage: Storage, engine: str, result: ParseResult, *, url: str, query_id: int | None
) -> None:
    """Queue a block page for a person, and say so in the log."""
    intervention = storage.add_intervention(
        engine=engine, url=url, query_id=query_id, kind=result.outcome.value, detail=result.detail
    )
    logger.warning(
        "%s answered %s with a %s page (%s): intervention %d queued",
        engine,
        url,
        result.outcome.value,
        result.detail,
        intervention,
    )


def record_block(
    storage: Storage,
    config: LyraConfig,
    stats: StatsCollector,
    engine: str,
    result: ParseResult,
    *,
    url: str,
    query_id: int | None,
) -> None:
    """What a block seen after the download does: an intervention and a breaker failure."""
    stats.inc_value(f"lyra/{engine}/block/{result.outcome.value}")
    record_intervention(storage, engine, result, url=url, query_id=query_id)
    trip_breaker(storage, config, stats, engine, result.outcome.value)
