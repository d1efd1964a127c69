"""Block detection: recognise CAPTCHA, JS-wall, geo-block, 403, 429 and repeated pages; queue
each one for a person and feed it to the circuit breaker.

Every response of a lyra request is judged once, here, by the engine's own parser (on a thread
of its own) plus the repeated-page check (lyra_crawl.session.judging): the markers of
search_parsers.yaml, structural checks (DuckDuckGo's bare home page), blocks an API declares in
its body (Qwant's DataDome answer), and a page that repeats the previous page of its source. The
verdict travels to the spider in the request's RequestState, so the page is not parsed again. A
block records an open intervention (`scrapy interventions` lists them), trips the breaker
through the verdict (CircuitBreakerMiddleware reads it, with the response's Retry-After), and is
counted under `lyra/<engine>/block/<kind>`.

Settings: LYRA_BREAKER_ENABLED (it exists to feed the breaker).
"""

from __future__ import annotations

import logging

from scrapy import Request
from scrapy.http import Response

from lyra_crawl.middlewares.base import EngineMiddleware
from lyra_crawl.session.judging import judge_on_thread, response_engine_url

logger = logging.getLogger(__name__)


class BlockDetectionMiddleware(EngineMiddleware):
    enabled_setting = "LYRA_BREAKER_ENABLED"

    async def process_response(self, request: Request, response: Response) -> Response:
        state = self.state_of(request)
        query = self.session.query(state.query_id) if state is not None else None
        if state is None or query is None:
            return response
        engine = state.engine
        simulator_url = self.session.simulator_url
        verdict = await judge_on_thread(
            self.config.engine(engine),
            response,
            state,
            query,
            simulator_url,
            self.session.parser_thread,
        )
        state.verdict = verdict
        if verdict.blocked:
            kind = verdict.outcome.value
            url = response_engine_url(response, state, simulator_url)
            self.count(engine, f"block/{kind}")
            intervention = await self.session.store.add_intervention(
                engine=engine, url=url, query_id=state.query_id, kind=kind, detail=verdict.detail
            )
            logger.warning(
                "%s answered %s with a %s page (%s): intervention %d queued",
                engine,
                url,
                kind,
                verdict.detail,
                intervention,
            )
        return response
