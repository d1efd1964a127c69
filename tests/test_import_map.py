"""The code map enforced: ARCHITECTURE.md's "may import" table as import-linter contracts
(.importlinter), and no import cycle among lyra's modules.

`make lint` runs the same contracts; running them here puts them in `make test`, which is what
CI runs. Type-checking imports count as imports in both checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


# Cycles lying wholly in backends/ wait for the store rewrite (issue 36, statements written
# once), which owns those files: backends/__init__.py imports the PostgreSQL and Redis backends
# where it opens them, and they import its `redact_url`.
LEFT_TO_THE_STORE_REWRITE = "lyra_crawl.backends"


def lint_imports(folder: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the package and .importlinter found in `folder`."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(folder)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each set of modules that import each other, directly or through others, sorted."""
    edges = nx.DiGraph()
    for module in graph.modules:
        edges.add_node(module)
        edges.add_edges_from(
            (module, imported) for imported in graph.find_modules_directly_imported_by(module)
        )
    cycles = [sorted(c) for c in nx.strongly_connected_components(edges) if len(c) > 1]
    return sorted(cycles)


@pytest.mark.subprocess
def test_the_code_map_holds() -> None:
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


# Each an import that breaks the map, in a file of a copy of the package: a pure package that
# imports Scrapy, a middleware that opens a store itself, and a parser that reaches up to the
# crawl session behind a type-checking guard.
FORBIDDEN = {
    "lyra_crawl/papers/fusion.py": ("import scrapy\n", "pure packages import no Scrapy"),
    "lyra_crawl/middlewares/daily_quota.py": (
        "from lyra_crawl.backends.sqlite.store import SqliteStore\n",
        "middlewares/ may import",
    ),
    "lyra_crawl/engines/base.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from lyra_crawl.session.crawl import CrawlSession\n",
        "engines/ may import",
    ),
}


@pytest.mark.subprocess
def test_a_forbidden_import_is_caught(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "lyra_crawl",
        tmp_path / "lyra_crawl",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(ROOT / ".importlinter", tmp_path)
    for path, (line, _) in FORBIDDEN.items():
        with (tmp_path / path).open("a") as module:
            module.write(line)
    run = lint_imports(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    report = " ".join(run.stdout.split())  # the report wraps long lines
    assert f"{len(FORBIDDEN)} broken." in report, report
    for path, (_, contract) in FORBIDDEN.items():
        module = path.removesuffix(".py").replace("/", ".")
        assert contract in report, report
        assert module in report, report


def test_no_import_cycle_among_modules() -> None:
    graph = grimp.build_graph("lyra_crawl", cache_dir=None)  # type-checking imports included
    cycles = [
        cycle
        for cycle in import_cycles(graph)
        if not all(module.startswith(LEFT_TO_THE_STORE_REWRITE) for module in cycle)
    ]
    assert cycles == []


def test_an_import_cycle_is_found() -> None:
    graph = grimp.ImportGraph()
    graph.add_import(importer="pkg.crawl", imported="pkg.closing")
    graph.add_import(importer="pkg.closing", imported="pkg.opening")
    graph.add_import(importer="pkg.opening", imported="pkg.crawl")
    graph.add_import(importer="pkg.spider", imported="pkg.crawl")
    assert import_cycles(graph) == [["pkg.closing", "pkg.crawl", "pkg.opening"]]


def map_rows() -> list[str]:
    """The first path of each row of ARCHITECTURE.md's code map ("`middlewares/`", ...)."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    table = text.split("## Code map", 1)[1].split("\n## ", 1)[0]
    return [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]


def test_every_row_of_the_map_is_a_contract() -> None:
    """Each row but `commands/` (which may import anything) has its contract, named after it."""
    names = [
        line.removeprefix("name = ")
        for line in (ROOT / ".importlinter").read_text().splitlines()
        if line.startswith("name = ")
    ]
    rows = [row for row in map_rows() if row != "commands/"]
    assert len(rows) > 20
    assert [row for row in rows if not any(name.startswith(row) for name in names)] == []
