"""The guard (tests/realworld_guard.py) over every real page, the project's and ../shared's.

Every result a parser returns sits one block below its layout's results container, in no module
and inside no other result; no page read as layout_changed shows a challenge. The guard is
also shown to catch what it is for, on real pages: a results container's module read as
results, and a challenge page.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from lyra_crawl.config import load_config
from lyra_crawl.engines.base import Outcome
from lyra_crawl.engines.parsing import parse_page
from tests.realworld_fields import ROOTS, engine_of, manifest
from tests.realworld_guard import challenge_signs, misplaced_results

CONFIG = load_config()
PAA_PAGE = "serp/google/codechallenge-google-paa-answers-actors-2022-11.html"
NESTED_PAGE = "serp/google/codechallenge-google-paa-top-stories-prime-ministers-2023-07.html"


def _pages() -> list:
    cases = []
    for root in ("project", "shared"):
        entries = manifest(root)
        if not entries:
            reason = f"real pages not found at {ROOTS[root]} (set LYRA_REALWORLD_DIR)"
            cases.append(pytest.param(root, "", {}, marks=pytest.mark.skip(reason=reason)))
        for rel, entry in sorted(entries.items()):
            cases.append(pytest.param(root, rel, entry, id=f"{root}/{rel}"))
    return cases


@pytest.mark.parametrize(("root", "rel", "entry"), _pages())
def test_a_real_page_passes_the_guard(root: str, rel: str, entry: dict) -> None:
    spec = CONFIG.engine(engine_of(rel, entry))
    body = (ROOTS[root] / rel).read_bytes()
    result = parse_page(spec, body, entry.get("page") or 1, status=entry.get("status") or 200)

    if spec.family == "html":
        assert misplaced_results(spec, body) == []
    if result.outcome is Outcome.LAYOUT_CHANGED:
        assert challenge_signs(body) == [], "a challenge page read as layout_changed"


def test_every_html_layout_names_its_results_container() -> None:
    for spec in CONFIG.engines.values():
        for layout in spec.parse:
            assert layout.container, f"{spec.name} layout {layout.layout!r}"


def test_the_guard_catches_answers_read_as_results() -> None:
    google = CONFIG.engine("google")
    without_modules = replace(google, parse=(replace(google.parse[0], modules=()),))
    body = (ROOTS["project"] / PAA_PAGE).read_bytes()

    assert misplaced_results(google, body) == []
    problems = misplaced_results(without_modules, body)
    assert len(problems) == 4 and all("in a module headed" in why for why in problems)


def test_the_guard_catches_pages_listed_under_a_result_read_as_results() -> None:
    google = CONFIG.engine("google")
    current = google.parse[0]
    unlisted = replace(current, results=(current.results[0].replace("[not(ancestor::li)]", ""),))
    body = (ROOTS["project"] / NESTED_PAGE).read_bytes()

    problems = misplaced_results(replace(google, parse=(unlisted,)), body)

    assert len(problems) == 2
    assert all("in a list under another result" in why for why in problems)


@pytest.mark.parametrize(
    ("root", "rel"),
    [
        ("project", "serp/google/unlimproxy-google-sorry-captcha-2026-07.html"),
        ("shared", "serp/duckduckgo/celina-ddg-lite-anomaly-captcha-2026-07.html"),
        ("shared", "serp/bing/wsm-bing-captcha-one-last-step-2026-04.html"),
    ],
)
def test_the_guard_sees_a_real_challenge_page(root: str, rel: str) -> None:
    if not ROOTS[root].is_dir():
        pytest.skip(f"real pages not found at {ROOTS[root]} (set LYRA_REALWORLD_DIR)")

    assert challenge_signs((ROOTS[root] / rel).read_bytes())
