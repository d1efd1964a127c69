"""The size of `lyra_crawl/backends/` (issue 36 asks ≤ 4,000 lines of Python and SQL), beside
its floor: the same code with no docstring, comment or optional blank line, formatted as the
project formats code.

* ``backends_lines``: every line of its .py and .sql files, as the issue counted them.
* ``backends_code_lines``: the lines that are not blank, a comment or a docstring (as cloc
  counts code).
* ``backends_lines_floor``: the lines left when every docstring and comment is removed and the
  rest is formatted by `ruff format` (the blank lines it keeps between definitions included):
  what this code needs with no documentation at all.
"""

from __future__ import annotations

import ast
import io
import pathlib
import subprocess
import sys
import tokenize

ROOT = pathlib.Path(__file__).resolve().parent.parent
BACKENDS = ROOT / "lyra_crawl" / "backends"


def run(shared_dir: pathlib.Path) -> dict[str, float]:
    sources = sorted(BACKENDS.rglob("*.py"))
    texts = [path.read_text() for path in sources]
    sql_lines = sum(len(path.read_text().splitlines()) for path in BACKENDS.rglob("*.sql"))
    return {
        "backends_lines": sum(len(text.splitlines()) for text in texts) + sql_lines,
        "backends_code_lines": sum(len(_code_lines(text)) for text in texts) + sql_lines,
        "backends_lines_floor": sum(_floor_lines(text) for text in texts) + sql_lines,
    }


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if _docstring(node) is not None:
            first = node.body[0]
            lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def _docstring(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return first if isinstance(first.value.value, str) else None
    return None


def _code_lines(text: str) -> set[int]:
    """Line numbers holding code: not blank, not only a comment, not in a docstring."""
    docstrings = _docstring_lines(ast.parse(text))
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT):
            continue
        if token.type in (tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        code.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docstrings)
    return code


def _floor_lines(text: str) -> int:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if (docstring := _docstring(node)) is not None:
            node.body.remove(docstring)
            node.body = node.body or [ast.Expr(ast.Constant(...))]
    formatted = subprocess.run(
        [pathlib.Path(sys.executable).with_name("ruff"), "format", "--stdin-filename", "x.py", "-"],
        input=ast.unparse(tree),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    return len(formatted.splitlines())
