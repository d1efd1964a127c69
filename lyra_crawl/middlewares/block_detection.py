"""Block detection: recognise CAPTCHA / 403 / 429 pages and queue them for a person.

Uses the engine's block markers from search_parsers.yaml (lyra_crawl/engines/blocks.py). A block
records a row in `intervention_queue` (status open; `scrapy interventions` lists them), marks
the request so CircuitBreakerMiddleware trips the engine's breaker (with the response's
Retry-After, if any), and is counted under `lyra/<engine>/block/<kind>`. The response still
reaches the spider, whose parser reports the same block and ends that source's pagination.

Settings: LYRA_BREAKER_ENABLED (it exists to feed the breaker), LYRA_CONFIG_DIR, LYRA_DB_PATH.
"""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.http import Response

from lyra_crawl.engines.blocks import detect_block
from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.middlewares.circuit_breaker import BLOCK_META, RETRY_AFTER_META

logger = logging.getLogger(__name__)


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
        text = response.body.decode("utf-8", errors="replace")
        block = detect_block(spec, text, response.status, response.url)
        if block is None:
            return response
        kind, detail = block
        request.meta[BLOCK_META] = kind.value
        request.meta[RETRY_AFTER_META] = retry_after_s(response)
        intervention = self.storage.add_intervention(
            engine=engine,
            url=response.url,
            query_id=request.meta.get("lyra_query_id"),
            kind=kind.value,
            detail=detail,
        )
        self.count(engine, f"block/{kind.value}")
        logger.warning(
            "%s answered %s with a %s page (%s): intervention %d queued",
            engine,
            response.url,
            kind.value,
            detail,
            intervention,
        )
        return response
