"""JSON search APIs in their real response shapes: Qwant, Wikipedia, Wikidata."""

from __future__ import annotations

import json
from html import escape

from lyra_crawl.simulator.corpus import SimResult
from lyra_crawl.simulator.engines.base import OffsetPaged, SimPage, json_page


def _rate_limited(body: dict) -> SimPage:
    return SimPage(429, json.dumps(body), "application/json", (("Retry-After", "2"),))


def _maxlag_page(params: dict[str, str], lag_s: int) -> SimPage | None:
    """MediaWiki's answer to a request whose `maxlag` the replicas' lag exceeds: an error
    document served as 200, with the wait in Retry-After (at least 5 s) and the lag in
    X-Database-Lag, as Manual:Maxlag_parameter describes it; None for a request without
    maxlag or with a larger one."""
    try:
        asked = int(params["maxlag"])
    except (KeyError, ValueError):
        return None
    if lag_s <= asked:
        return None
    body = {
        "error": {
            "code": "maxlag",
            "info": f"Waiting for db1: {lag_s} seconds lagged.",
            "host": "db1",
            "lag": lag_s,
            "*": "See the api.php help for API usage.",
        },
        "servedby": "sim",
    }
    headers = (("Retry-After", str(max(asked, 5))), ("X-Database-Lag", str(lag_s)))
    return SimPage(200, json.dumps(body), "application/json", headers)


class Qwant(OffsetPaged):
    """api.qwant.com/v3/search/web: `offset` = (N-1)*10; results in `mainline` groups."""

    name = "qwant"
    page_param = "offset"

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        web = [
            {"_id": f"sim{i}", "position": i, "title": r.title, "url": r.url, "desc": r.snippet}
            for i, r in enumerate(results, start=1)
        ]
        ads = {"type": "ads", "items": [{"title": "Sponsored", "url": "https://ad.sim/"}]}
        mainline = [ads, {"type": "web", "items": web}] if web else []
        return json_page(
            json.dumps(
                {
                    "status": "success",
                    "data": {
                        "query": {"query": query, "offset": (page_number - 1) * self.step},
                        "result": {"total": 200, "items": {"mainline": mainline}},
                    },
                }
            )
        )

    def captcha_page(self, query: str) -> SimPage:
        # DataDome's answer to a client it distrusts.
        body = {"url": "https://geo.captcha-delivery.com/captcha/?initialCid=sim&cid=sim"}
        return SimPage(403, json.dumps(body), "application/json")


class Wikipedia(OffsetPaged):
    """<language>.wikipedia.org/w/api.php, action=query&list=search, paged by `sroffset`."""

    name = "wikipedia"
    per_page = 20
    page_param = "sroffset"
    step = 20
    query_param = "srsearch"

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        offset = (page_number - 1) * self.step
        rows = [
            {
                "ns": 0,
                "title": r.title,
                "pageid": 1000 + offset + i,
                "snippet": f'<span class="searchmatch">{escape(r.snippet)}</span>',
                "timestamp": "2025-10-01T15:56:11Z",
            }
            for i, r in enumerate(results)
        ]
        body = {
            "batchcomplete": "",
            "continue": {"sroffset": offset + len(rows), "continue": "-||"},
            "query": {"searchinfo": {"totalhits": 200}, "search": rows},
        }
        return json_page(json.dumps(body))

    def captcha_page(self, query: str) -> SimPage:
        return _rate_limited({"error": {"code": "ratelimited", "info": "slow down"}})

    def lagged_page(self, params: dict[str, str], lag_s: int) -> SimPage | None:
        return _maxlag_page(params, lag_s)


class Wikidata(OffsetPaged):
    """www.wikidata.org/w/api.php, action=wbsearchentities, paged by `continue`."""

    name = "wikidata"
    per_page = 7
    page_param = "continue"
    step = 7
    query_param = "search"

    def results_page(self, query: str, page_number: int, results: list[SimResult]) -> SimPage:
        offset = (page_number - 1) * self.step
        rows = []
        for i, r in enumerate(results):
            qid = f"Q{100000 + offset + i}"
            rows.append(
                {
                    "id": qid,
                    "concepturi": f"http://www.wikidata.org/entity/{qid}",
                    "url": f"//www.wikidata.org/wiki/{qid}",
                    "title": qid,
                    "label": r.title,
                    "description": r.snippet,
                    "match": {"type": "label", "language": "en", "text": r.title},
                }
            )
        body = {"searchinfo": {"search": query}, "search": rows, "success": 1}
        if rows:
            body["search-continue"] = offset + len(rows)
        return json_page(json.dumps(body))

    def captcha_page(self, query: str) -> SimPage:
        return _rate_limited({"error": {"code": "ratelimited", "info": "slow down"}})

    def lagged_page(self, params: dict[str, str], lag_s: int) -> SimPage | None:
        return _maxlag_page(params, lag_s)
