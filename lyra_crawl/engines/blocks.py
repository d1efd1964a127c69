"""Tell a block page (CAPTCHA, JS wall, geo-block, 403/429) from a page of results. Pure."""

from __future__ import annotations

from lyra_crawl.config import EngineSpec
from lyra_crawl.engines.base import Outcome

# Statuses that are blocks whatever the engine's markers say.
STATUS_BLOCKS = {429: Outcome.RATE_LIMITED}


def detect_block(spec: EngineSpec, text: str, status: int, url: str) -> tuple[Outcome, str] | None:
    """The block this response is, with the marker that matched, or None."""
    for rule in spec.blocks:
        if status in rule.status and (
            not rule.body_contains or any(m in text for m in rule.body_contains)
        ):
            return rule.kind, f"HTTP {status}"
        for marker in rule.url_contains:
            if marker in url:
                return rule.kind, f"redirected to {url}"
        if not rule.status:
            for marker in rule.body_contains:
                if marker in text:
                    return rule.kind, f"page contains {marker!r}"
    if status in STATUS_BLOCKS:
        return STATUS_BLOCKS[status], f"HTTP {status}"
    return None
