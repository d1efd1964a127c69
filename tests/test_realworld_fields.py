"""Every real page parses to its expected results field by field: URL, title and snippet of each.

A parser returning ads with the right count fails here. The expected files and the pages they
describe are listed in tests/realworld_fields.py; shared pages skip without ../shared/realworld.
"""

from __future__ import annotations

import json

import pytest

from tests.realworld_fields import FIELDS_DIR, ROOTS, as_fields, parse_real_page


def _cases() -> list:
    cases = []
    for path in sorted(FIELDS_DIR.rglob("*.json")):
        root = path.relative_to(FIELDS_DIR).parts[0]
        rel = path.relative_to(FIELDS_DIR / root).as_posix().removesuffix(".json")
        marks = []
        if not ROOTS[root].is_dir():
            reason = f"real pages not found at {ROOTS[root]} (set LYRA_REALWORLD_DIR)"
            marks = [pytest.mark.skip(reason=reason)]
        cases.append(pytest.param(root, rel, path, id=f"{root}/{rel}", marks=marks))
    return cases


@pytest.mark.parametrize(("root", "rel", "expected_file"), _cases())
def test_real_page_parses_field_by_field(root, rel, expected_file) -> None:
    expected = json.loads(expected_file.read_text(encoding="utf-8"))

    result = parse_real_page(root, rel, expected["engine"], expected["page"], expected["status"])

    assert result.outcome.value == expected["outcome"], result.detail
    found = as_fields(result)
    for index, (want, got) in enumerate(zip(expected["results"], found, strict=False)):
        assert got == want, f"result {index + 1}"
    assert len(found) == len(expected["results"])
