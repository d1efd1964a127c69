"""Real landing pages read field by field: the abstract, the field it came from, every field's
verdict, exactly as checked against each page (tests/data/realworld/landing/pages.json).

The pages are publishers' pages saved by other public projects' tests, kept byte for byte
(their sha256 is in pages.json); they are decoded as Scrapy decodes a response (w3lib).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from w3lib.encoding import html_to_unicode

from lyra_crawl.papers.landing import judge_fields, read_abstract

LANDING_DIR = Path(__file__).resolve().parent / "data" / "realworld" / "landing"
PAGES: dict[str, dict[str, Any]] = json.loads(
    (LANDING_DIR / "pages.json").read_text(encoding="utf-8")
)


def _cases() -> list[Any]:
    cases = []
    for name, entry in sorted(PAGES.items()):
        limitation = entry.get("known_limitation")
        marks = [pytest.mark.xfail(reason=limitation, strict=True)] if limitation else []
        cases.append(pytest.param(name, entry, id=name, marks=marks))
    return cases


def _page_text(name: str, entry: dict[str, Any]) -> str:
    body = (LANDING_DIR / name).read_bytes()
    assert hashlib.sha256(body).hexdigest() == entry["sha256"], f"{name} is not the saved page"
    return html_to_unicode(None, body)[1]


@pytest.mark.parametrize(("name", "entry"), _cases())
def test_real_landing_page_gives_its_abstract(name: str, entry: dict[str, Any]) -> None:
    expected = entry["expected"]

    found = read_abstract(_page_text(name, entry), min_chars=entry["min_abstract_chars"])

    assert found.outcome.value == expected["outcome"], found.detail
    assert found.field == expected.get("field")
    assert found.abstract == expected.get("abstract")


@pytest.mark.parametrize(("name", "entry"), list(PAGES.items()), ids=list(PAGES))
def test_real_landing_page_fields_judged_one_by_one(name: str, entry: dict[str, Any]) -> None:
    verdicts = judge_fields(_page_text(name, entry), min_chars=entry["min_abstract_chars"])

    fields = [f"{v.field}: {v.outcome.value}" for v in verdicts if v.field]
    assert fields == entry["expected"]["fields"]


# Licences of the repositories the pages come from that let them be kept with these tests.
LICENSES = {"MIT", "GPL-3.0"}
PROVENANCE = {"publisher", "repo", "path", "commit", "license", "captured", "sha256"}


def test_every_page_file_has_its_provenance_and_every_entry_a_file() -> None:
    files = {path.name for path in LANDING_DIR.glob("*.html")}

    assert files == set(PAGES)
    for name, entry in PAGES.items():
        assert set(entry) >= PROVENANCE, (name, PROVENANCE - set(entry))
        assert entry["license"] in LICENSES, (name, entry["license"])
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), name
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["captured"]), name


def test_the_real_pages_cover_every_outcome_and_field_kind() -> None:
    """The set keeps a page for each way a landing page answers."""
    outcomes = {entry["expected"]["outcome"] for entry in PAGES.values()}
    winners = {entry["expected"].get("field") for entry in PAGES.values()}

    assert outcomes == {
        "abstract",
        "blocked",
        "no_metadata",
        "too_short",
        "truncated",
        "not_an_abstract",
    }
    assert {"citation_abstract", "dc.description", "og:description", "description"} <= winners
    assert "microdata:description" in winners
    assert any(winner and winner.startswith("body:") for winner in winners)


def test_every_page_says_whether_it_shows_an_abstract_and_none_without_one_gives_one() -> None:
    """`shows_abstract` (checked by reading each page) is what `make bench` counts misses by."""
    for name, entry in PAGES.items():
        assert isinstance(entry["shows_abstract"], bool), name
        if entry["expected"]["outcome"] == "abstract":
            assert entry["shows_abstract"], name
