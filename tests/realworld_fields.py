"""Field-by-field expected output of every real page: where it lives, and a writer for new pages.

Real pages live in two roots: `shared` (../shared/realworld, read in place) and `project`
(tests/data/realworld, pages this project gathered, with provenance in its pages.json). Each
page's expected output is `tests/data/realworld/fields/<root>/<path>.json`:

    {"engine": "bing", "page": 1, "status": 200, "outcome": "ok",
     "results": [{"url": "…", "title": "…", "snippet": "…"}, …]}

`snippet` is given only where the page shows one. The writer prints what the parser reads today,
as a starting point: check every result against the page itself before keeping it.

    python -m tests.realworld_fields write shared serp/bing/some-page.html [--page 2]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import ParseResult
from lyra_crawl.engines.parsing import parse_page

ROOT = Path(__file__).resolve().parent.parent
PROJECT_DIR = ROOT / "tests" / "data" / "realworld"
FIELDS_DIR = PROJECT_DIR / "fields"
SHARED_DIR = Path(os.environ.get("LYRA_REALWORLD_DIR") or ROOT.parent / "shared" / "realworld")
ROOTS = {"shared": SHARED_DIR, "project": PROJECT_DIR}
# What each root says about its pages (engine, page number, status, provenance).
MANIFESTS = {"shared": "expected.json", "project": "pages.json"}


def manifest(root: str) -> dict[str, dict[str, Any]]:
    path = ROOTS[root] / MANIFESTS[root]
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def engine_of(rel: str, entry: dict[str, Any]) -> str:
    """The engine a page belongs to: its manifest entry's, else its folder's (api/<source>/…)."""
    return entry.get("engine") or Path(rel).parts[1]


def parse_real_page(root: str, rel: str, engine: str, page: int, status: int) -> ParseResult:
    body = (ROOTS[root] / rel).read_bytes()
    return parse_page(load_config().engine(engine), body, page, status=status)


def as_fields(result: ParseResult) -> list[dict[str, str]]:
    """The results as the fields file lists them."""
    rows = []
    for found in result.results:
        row = {"url": found.url, "title": found.title}
        if found.snippet:
            row["snippet"] = found.snippet
        rows.append(row)
    return rows


def fields_path(root: str, rel: str) -> Path:
    return FIELDS_DIR / root / f"{rel}.json"


def write(root: str, rel: str, page: int | None, status: int | None) -> Path:
    entry = manifest(root).get(rel, {})
    engine = engine_of(rel, entry)
    page = page or entry.get("page") or 1
    status = status or entry.get("status") or 200
    result = parse_real_page(root, rel, engine, page, status)
    doc = {
        "engine": engine,
        "page": page,
        "status": status,
        "outcome": result.outcome.value,
        "results": as_fields(result),
    }
    path = fields_path(root, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write", help="write a page's fields file from today's parse")
    writer.add_argument("root", choices=sorted(ROOTS))
    writer.add_argument("rel", help="the page's path relative to its root")
    writer.add_argument("--page", type=int, help="page number to parse it as (default: manifest)")
    writer.add_argument("--status", type=int, help="HTTP status it came with (default: 200)")
    args = parser.parse_args()
    path = write(args.root, args.rel, args.page, args.status)
    print(f"wrote {path.relative_to(ROOT)}: check every result against the page")


if __name__ == "__main__":
    main()
