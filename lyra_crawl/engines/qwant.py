"""Qwant web search API (api.qwant.com/v3/search/web): JSON, results in `mainline` groups.

Only groups of type `web` are organic results; `ads` and widget groups are skipped. Errors come
back as `status: error` with a code: 24 means too many requests, a `captchaUrl` is DataDome's
CAPTCHA (seen 2026-04). The pre-v3 API (api.qwant.com/api/search/web, seen 2019-12) put its
results straight in `data.result.items` (a list): that, or a mainline without a web group, is
`layout_changed`.
"""

from __future__ import annotations

from typing import Any

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Extracted, Outcome, SerpResult, record_results
from lyra_crawl.engines.shapes import json_document, key_paths, layout_changed

RATE_LIMIT_CODE = 24
SHAPE = "data.result.items.mainline (a list of result groups, one of type web)"


def extract(spec: EngineSpec, body: bytes, page_number: int, url: str) -> Extracted:
    doc, problem = json_document(body, SHAPE)
    if problem is not None:
        return problem
    if "status" not in doc:
        return layout_changed(SHAPE, f"the body has {key_paths(doc) or 'no keys'}")
    data = doc.get("data") or {}
    if doc.get("status") != "success":
        if (data.get("error_data") or {}).get("captchaUrl"):
            return Extracted(block=Outcome.CAPTCHA, error="DataDome CAPTCHA")
        code = data.get("error_code")
        if code == RATE_LIMIT_CODE:
            return Extracted(block=Outcome.RATE_LIMITED, error=f"error_code {code}")
        return Extracted(error=f"Qwant error_code {code}")
    found = (data.get("result") or {}).get("items")
    if isinstance(found, list):
        return layout_changed(SHAPE, "data.result.items is a list (the pre-v3 API)")
    groups = (found or {}).get("mainline") or []
    if not isinstance(groups, list):
        return layout_changed(SHAPE, f"data.result.items.mainline is {type(groups).__name__}")
    kinds = [group.get("type") for group in groups if isinstance(group, dict)]
    if groups and "web" not in kinds:
        return layout_changed(SHAPE, f"the groups are of type {', '.join(map(str, kinds))}")
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
