"""Abstracts read from real landing pages: where from, how many missed, and what reading costs.

The pages are the project's (tests/data/realworld/landing) and any under
<shared>/realworld/landing, each with its pages.json entry saying whether the page shows the
paper's abstract (`shows_abstract`, checked by reading the page). Every page is read as the
papers spider reads it (lyra_crawl.papers.landing.read_abstract) and counted by where its
abstract came from:

- landing_abstracts.metadata / .microdata / .rdfa / .body: abstracts read from the head's
  metadata (citation_abstract, Dublin Core, JSON-LD, descriptions), from microdata, from RDFa,
  from the body's abstract section;
- landing_abstracts.missed: pages that show an abstract and gave none;
- landing_abstracts.read_without_one: pages that show none and gave one (0 is right);
- landing_abstracts.pages, landing_abstracts.showing_one: the pages, and those with an abstract.

Cost, timed alternately in one run, median over the pages: landing_read_ms_median (the whole
read, the page's parse included) and landing_read_ratio_vs_parse (the read over the bare parse
of the same text, per page); extruct's share: landing_microdata_ms_median and
landing_rdfa_ms_median (as the reader runs them: RDFa only on pages with an RDFa property that
may be an abstract), beside landing_rdfa_everywhere_ms_median (pyRdfa on every page, which the
reader avoids).
"""

from __future__ import annotations

import json
import pathlib
import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial

import lxml.etree
from extruct.rdfa import RDFaExtractor
from extruct.utils import parse_xmldom_html
from parsel import Selector
from w3lib.encoding import html_to_unicode

from benchmarks.bench_parse import median_seconds
from lyra_crawl.papers.landing import LandingOutcome, read_abstract
from lyra_crawl.papers.landing_structured import microdata_fields, rdfa_fields

PROJECT_PAGES = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "realworld"
SOURCES = ("metadata", "microdata", "rdfa", "body")


def landing_pages(shared_dir: pathlib.Path) -> list[tuple[pathlib.Path, dict]]:
    """(file, pages.json entry) of every real landing page: the project's and shared's."""
    pages = []
    for folder in (PROJECT_PAGES / "landing", shared_dir / "realworld" / "landing"):
        manifest = folder / "pages.json"
        if manifest.is_file():
            entries = json.loads(manifest.read_text(encoding="utf-8"))
            pages += [(folder / name, entry) for name, entry in sorted(entries.items())]
    return pages


def source_of(field: str) -> str:
    """Where a field is read from: `microdata:description` is microdata, `og:description`
    metadata."""
    prefix = field.split(":", 1)[0]
    return prefix if prefix in SOURCES else "metadata"


def _all(fields: Callable[..., Iterator[object]], root: object) -> list[object]:
    return list(fields(root))


def _rdfa_everywhere(root: lxml.etree._Element) -> object:
    html = lxml.etree.tostring(root.getroottree(), encoding="utf-8", method="html")
    return RDFaExtractor().extract_items(parse_xmldom_html(html, encoding="utf-8"))


def run(shared_dir: pathlib.Path, rounds: int = 9) -> dict[str, float]:
    counts: Counter[str] = Counter()
    read_ms, ratios, microdata_ms, rdfa_ms, rdfa_everywhere_ms = [], [], [], [], []
    for path, entry in landing_pages(shared_dir):
        text = html_to_unicode(None, path.read_bytes())[1]
        found = read_abstract(text, min_chars=entry["min_abstract_chars"])
        shows = entry["shows_abstract"]
        counts["pages"] += 1
        counts["showing_one"] += shows
        if found.outcome is LandingOutcome.ABSTRACT:
            counts[source_of(found.field or "") if shows else "read_without_one"] += 1
        elif shows:
            counts["missed"] += 1
        parse = partial(Selector, text=text, type="html")
        read = partial(read_abstract, text, min_chars=entry["min_abstract_chars"])
        root = parse().root
        parse()
        read()  # warm caches (compiled XPath, imports) before timing
        parse_s = median_seconds(parse, rounds)
        read_s = median_seconds(read, rounds)
        read_ms.append(read_s * 1000)
        ratios.append(read_s / parse_s)
        microdata = partial(_all, microdata_fields, root)
        microdata_ms.append(median_seconds(microdata, rounds) * 1000)
        rdfa_ms.append(median_seconds(partial(_all, rdfa_fields, root), rounds) * 1000)
        rdfa_everywhere_ms.append(
            median_seconds(partial(_rdfa_everywhere, root), min(rounds, 3)) * 1000
        )
    figures = {
        f"landing_abstracts.{key}": float(counts[key])
        for key in ("pages", "showing_one", *SOURCES, "missed", "read_without_one")
    }
    if read_ms:
        figures |= {
            "landing_read_ms_median": round(statistics.median(read_ms), 3),
            "landing_read_ratio_vs_parse": round(statistics.median(ratios), 2),
            "landing_microdata_ms_median": round(statistics.median(microdata_ms), 3),
            "landing_rdfa_ms_median": round(statistics.median(rdfa_ms), 3),
            "landing_rdfa_everywhere_ms_median": round(statistics.median(rdfa_everywhere_ms), 3),
        }
    return figures


if __name__ == "__main__":
    shared = pathlib.Path(__file__).resolve().parents[2] / "shared"
    for name, value in run(shared).items():
        print(f"{name:40} {value}")
