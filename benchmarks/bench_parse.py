"""Parse speed per engine on the captured real pages, next to a bare parse of the same bytes.

For every page under <shared>/realworld/serp: the median time of `parse_page` (block markers,
XPath rules or the API module, URL unwrapping) and of the bare document parse it cannot avoid
(`lxml.html.fromstring` for HTML, `json.loads` for JSON, `lxml.etree.fromstring` for XML), timed
alternately in one run. Figures: parse_ms_median.<engine> (median over the engine's pages) and
parse_ratio_vs_bare.<engine> (the same median of per-page ratios).
"""

from __future__ import annotations

import json
import pathlib
import statistics
import time
from collections.abc import Callable
from functools import partial

import lxml.etree
import lxml.html

from lyra_crawl.config import load_config
from lyra_crawl.engines.parsing import parse_page

_XML_PARSER = lxml.etree.XMLParser(load_dtd=False, no_network=True)


def bare_parser(body: bytes) -> Callable[[bytes], object]:
    """The plain parse the body's own format needs (an API may answer with an HTML page)."""
    start = body.lstrip()[:5]
    if start[:1] in (b"{", b"["):
        return json.loads
    if start == b"<?xml":
        return partial(lxml.etree.fromstring, parser=_XML_PARSER)
    return lxml.html.fromstring


def _median_seconds(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(shared_dir: pathlib.Path, rounds: int = 15) -> dict[str, float]:
    """Figures for every engine that has captured pages under shared_dir/realworld."""
    realworld = shared_dir / "realworld"
    expected = json.loads((realworld / "expected.json").read_text(encoding="utf-8"))
    config = load_config()
    parse_ms: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for rel, entry in sorted(expected.items()):
        spec = config.engine(entry["engine"])
        body = (realworld / rel).read_bytes()
        page = entry.get("page", 1)
        bare = partial(bare_parser(body), body)
        ours = partial(parse_page, spec, body, page)
        bare()
        ours()  # warm caches (compiled XPath, imports) before timing
        bare_s = _median_seconds(bare, rounds)
        ours_s = _median_seconds(ours, rounds)
        parse_ms.setdefault(spec.name, []).append(ours_s * 1000)
        ratios.setdefault(spec.name, []).append(ours_s / bare_s)
    figures = {}
    for engine in sorted(parse_ms):
        figures[f"parse_ms_median.{engine}"] = round(statistics.median(parse_ms[engine]), 3)
        figures[f"parse_ratio_vs_bare.{engine}"] = round(statistics.median(ratios[engine]), 2)
    return figures


if __name__ == "__main__":
    shared = pathlib.Path(__file__).resolve().parents[2] / "shared"
    for name, value in run(shared).items():
        print(f"{name:40} {value}")
