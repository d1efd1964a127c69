"""Parse speed per engine on the captured real pages, next to a bare parse of the same bytes.

For every real page (<shared>/realworld and the project's tests/data/realworld): the median time
of `parse_page` (block markers, XPath rules or the API module, URL unwrapping) and of the bare
document parse it cannot avoid
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

PROJECT_PAGES = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "realworld"
_XML_PARSER = lxml.etree.XMLParser(load_dtd=False, no_network=True)


def bare_parser(body: bytes) -> Callable[[bytes], object]:
    """The plain parse the body's own format needs (an API may answer with an HTML page)."""
    start = body.lstrip()[:5]
    if start[:1] in (b"{", b"["):
        return json.loads
    if start == b"<?xml":
        return partial(lxml.etree.fromstring, parser=_XML_PARSER)
    return lxml.html.fromstring


def median_seconds(work: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def real_pages(shared_dir: pathlib.Path) -> list[tuple[str, pathlib.Path, int]]:
    """(engine, file, page number) of every real page: shared/realworld's and the project's."""
    pages = []
    for folder, manifest in (
        (shared_dir / "realworld", "expected.json"),
        (PROJECT_PAGES, "pages.json"),
    ):
        path = folder / manifest
        entries = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        for rel, entry in sorted(entries.items()):
            engine = entry.get("engine") or pathlib.PurePosixPath(rel).parts[1]
            pages.append((engine, folder / rel, entry.get("page") or 1))
    return pages


def run(shared_dir: pathlib.Path, rounds: int = 15) -> dict[str, float]:
    """Figures for every engine that has real pages (shared/realworld and the project's)."""
    config = load_config()
    parse_ms: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for engine, path, page in real_pages(shared_dir):
        spec = config.engine(engine)
        body = path.read_bytes()
        bare = partial(bare_parser(body), body)
        ours = partial(parse_page, spec, body, page)
        bare()
        ours()  # warm caches (compiled XPath, imports) before timing
        bare_s = median_seconds(bare, rounds)
        ours_s = median_seconds(ours, rounds)
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
