"""The backends' size figures count what they say they count."""

from __future__ import annotations

import pytest

from benchmarks.bench_code_size import _code_lines, _floor_lines

SOURCE = '''"""A module docstring
over two lines."""

import os


# A comment alone.
def first(path: str) -> bool:
    """What it says."""
    return os.path.exists(  # a comment after code
        path
    )


class Holder:
    """Only a docstring."""
'''


def test_code_lines_leave_out_blanks_comments_and_docstrings() -> None:
    assert sorted(_code_lines(SOURCE)) == [4, 8, 10, 11, 12, 15]


@pytest.mark.subprocess
def test_the_floor_is_the_code_laid_out_by_ruff_format_with_no_documentation() -> None:
    # import, 2 blanks, def and its body on one line, 2 blanks, `class Holder: ...`
    assert _floor_lines(SOURCE) == 8
