"""Qwant web search API (api.qwant.com/v3/search/web): JSON, results in `mainline` groups.

Only groups of type `web` are organic results; `ads` and widget groups are skipped. Errors come
back as `status: error` with a code: 24 means too many requests, a `captchaUrl` is DataDome's
CAPTCHA (seen 2026-04).
"""

from __future__ import annotations

from typing import Any

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, Outcome, SerpResult, json_object, record_results

RATE_LIMIT_CODE = 24


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = json_object(body)
    if problem:
        return Extracted(error=problem)
    data = doc.get("data") or {}
    if doc.get("status") != "success":
        if (data.get("error_data") or {}).get("captchaUrl"):
            return Extracted(block=Outcome.CAPTCHA, error="DataDome CAPTCHA")
        code = data.get("error_code")
        if code == RATE_LIMIT_CODE:
            return Extracted(block=Outcome.RATE_LIMITED, error=f"error_code {code}")
        return Extracted(error=f"Qwant error_code {code}")
    groups = ((data.get("result") or {}).get("items") or {}).get("mainline") or []
    items = [
        item
        for group in groups
        if isinstance(group, dict) and group.get("type") == "web"
        for item in group.get("items") or ()
    ]
    results, dropped = record_results(items, _result)
    return Extracted(results=results, dropped=dropped)


def _result(item: dict[str, Any]) -> SerpResult | None:
    if not (item.get("url") and item.get("title")):
        return None
    return SerpResult(url=item["url"], title=item["title"], snippet=item.get("desc") or "")
