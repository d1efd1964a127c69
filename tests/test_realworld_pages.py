"""The project's own real pages (tests/data/realworld) each carry their provenance and fields.

Every file under serp/ and api/ has its pages.json entry naming where it was found (repository,
path, commit, licence, capture date) and what it is; every entry names a file that is there; and
every page has its field-by-field expected output, which agrees with the entry.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.realworld_fields import PROJECT_DIR, fields_path, manifest

PAGES = manifest("project")
# Licences that let the pages be redistributed with the project's tests (SPDX identifiers;
# LicenseRef- names a permissive licence SPDX does not list, e.g. Biopython's).
LICENSES = re.compile(
    r"MIT|Apache-2\.0|BSD-[23]-Clause|ISC|CC0-1\.0|CC-BY(-SA)?-4\.0|LicenseRef-[\w.-]+"
)
PROVENANCE = {"repo", "path", "commit", "license", "captured", "engine", "organic", "blocked"}


def test_every_page_file_has_an_entry_and_every_entry_a_file() -> None:
    files = {
        path.relative_to(PROJECT_DIR).as_posix()
        for folder in ("serp", "api")
        for path in (PROJECT_DIR / folder).rglob("*")
        if path.is_file()
    }

    assert files == set(PAGES)


@pytest.mark.parametrize(("rel", "entry"), sorted(PAGES.items()), ids=sorted(PAGES))
def test_a_page_entry_says_where_the_page_comes_from(rel: str, entry: dict) -> None:
    assert set(entry) >= PROVENANCE, PROVENANCE - set(entry)
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry["repo"])
    assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"])
    assert LICENSES.fullmatch(entry["license"]), entry["license"]
    assert re.fullmatch(r"\d{4}-\d{2}(-\d{2}|/\d{2})?", entry["captured"])
    assert rel.split("/")[1] == entry["engine"]
    if entry["blocked"]:
        assert entry["block_kind"] and not entry["organic"]
    elif not entry["organic"] and not entry.get("error"):
        assert entry["outcome"] in ("empty", "layout_changed")


@pytest.mark.parametrize(("rel", "entry"), sorted(PAGES.items()), ids=sorted(PAGES))
def test_every_page_has_fields_that_agree_with_its_entry(rel: str, entry: dict) -> None:
    fields = json.loads(fields_path("project", rel).read_text(encoding="utf-8"))

    expected = entry.get("outcome", "ok")
    if entry["blocked"] or entry.get("error"):
        expected = entry["block_kind"] if entry["blocked"] else "error"
    assert (fields["outcome"], len(fields["results"])) == (expected, entry["organic"])
    assert (fields["page"], fields["status"]) == (entry.get("page", 1), entry.get("status", 200))
