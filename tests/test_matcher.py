"""The paper matcher: its trees load from the package, score the same on every run, and are what
the documented training gives."""

from __future__ import annotations

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest

from lyra_crawl.papers.canonical import CanonicalPaperIndex
from lyra_crawl.papers.matcher import FEATURES, WEIGHTS_FILE, Matcher, trained_matcher
from lyra_crawl.papers.records import PaperRecord
from lyra_crawl.papers.title_links import TitleLink, same_title_features, title_features
from training.datasets import NOISY_DEV_SET, noisy_dev_records

REPO = pathlib.Path(__file__).resolve().parents[1]
WEIGHTS = REPO / "lyra_crawl" / "papers" / WEIGHTS_FILE
SHARED = pathlib.Path(os.environ.get("LYRA_SHARED_DIR") or REPO.parent / "shared")

# Scores every pair the index judges on the noisy development set, printed one per line.
_SCORES = """
import sys
from lyra_crawl.papers.canonical import CanonicalPaperIndex
from training.datasets import NOISY_DEV_SET, noisy_dev_records

class Scores(CanonicalPaperIndex):
    def _same_paper(self, a, b, link):
        values = self._pair_values(a, b, link)
        if values is not None:
            print(repr(self.matcher.score(values)))
        return super()._same_paper(a, b, link)

records, _ = noisy_dev_records(NOISY_DEV_SET)
Scores().add_many(records.values())
"""


def test_the_trained_matcher_loads_from_the_package() -> None:
    matcher = trained_matcher()
    parameters = json.loads(WEIGHTS.read_text(encoding="utf-8"))

    assert parameters["features"] == list(FEATURES)
    assert len(matcher.trees) == len(parameters["trees"]) > 0
    assert 0 < matcher.threshold < 1
    assert set(parameters["training_sets"]) >= {"cora", "dirty_dblp_acm/train", "simulated"}
    for described in parameters["training_sets"].values():
        assert described["examples"] >= described["matches"] >= 0 < described["examples"]
        assert all(len(digest) == 64 for digest in described["files"].values())


@pytest.mark.subprocess
def test_it_scores_the_same_pairs_the_same_in_every_process() -> None:
    runs = [
        subprocess.run(
            [sys.executable, "-c", _SCORES],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for seed in ("1", "2")
    ]
    here = []

    class Scores(CanonicalPaperIndex):
        def _same_paper(self, a: int, b: int, link: TitleLink) -> bool:
            values = self._pair_values(a, b, link)
            if values is not None:
                here.append(repr(self.matcher.score(values)))
            return super()._same_paper(a, b, link)

    records, _ = noisy_dev_records(NOISY_DEV_SET)
    Scores().add_many(records.values())

    assert len(here) > 100
    assert runs[0] == runs[1] == here


@pytest.mark.parametrize(
    "title",
    ["adaptive sampling of soil moisture networks", "of the", "xml", "a b c d e f g h i j k l"],
)
def test_a_title_with_itself_has_the_features_it_would_score(title: str) -> None:
    words = tuple(title.split())
    assert same_title_features(words) == title_features(words, words)


def test_the_trees_decide_as_their_whole_score_does() -> None:
    matcher = trained_matcher()
    records, _ = noisy_dev_records(NOISY_DEV_SET)
    judged = []

    class Judged(CanonicalPaperIndex):
        def _same_paper(self, a: int, b: int, link: TitleLink) -> bool:
            values = self._pair_values(a, b, link)
            if values is not None:
                judged.append(values)
            return super()._same_paper(a, b, link)

    Judged().add_many(records.values())
    assert judged
    assert [matcher.same_paper(v) for v in judged] == [
        matcher.score(v) >= math.log(matcher.threshold / (1 - matcher.threshold)) for v in judged
    ]


def test_identifiers_decide_whatever_the_trees_say() -> None:
    never = Matcher(-100.0, (), 0.5)  # says "two papers" to every pair of titles
    index = CanonicalPaperIndex(matcher=never)
    keys = index.add_many(
        [
            PaperRecord(source="crossref", title="A title", doi="10.1000/x", year=2001),
            PaperRecord(source="openalex", title="Another title", doi="10.1000/X"),
            PaperRecord(source="arxiv", title="A title", year=2001),
        ]
    )

    assert keys == [0, 0, 2]


def test_weights_for_other_features_are_refused_with_the_fix() -> None:
    parameters = json.loads(WEIGHTS.read_text(encoding="utf-8"))
    parameters["features"] = parameters["features"][:-1]

    with pytest.raises(ValueError, match="retrain with `make train-matcher`"):
        Matcher.from_json(parameters)


@pytest.mark.subprocess
@pytest.mark.skipif(
    not (SHARED / "er" / "dblp_acm").is_dir(),
    reason=f"the DBLP-ACM sets the matcher trains on are not in {SHARED / 'er'}",
)
def test_retraining_by_the_documented_command_gives_the_committed_trees() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "training.train_matcher", "--check", "--shared", str(SHARED)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )

    assert checked.returncode == 0, checked.stderr
    assert "is what the training gives" in checked.stdout
