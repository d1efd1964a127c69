"""Whether two groups of records with linked titles are one paper, by trees learnt from
labelled pairs. Pure.

The matcher weighs ``FEATURES``: the titles' signals a link carries
(``title_links.TITLE_FEATURES``) and the groups' (``pair_features.GROUP_FEATURES``), each in
[0, 1]. It is a small ensemble of gradient-boosted regression trees: each tree reads a few of
the features against thresholds and gives a number, their sum with ``base`` is the log-odds
that the groups are one paper, and the matcher says so from ``threshold`` (a probability) on.
Trees weigh signals together where the hand-set rules had to name each case (a title cut
short with no year and garbled authors; similar titles whose endings differ, with or without a
shared author).

The trees are learnt offline from public labelled sets by ``python -m
training.train_matcher`` (``make train-matcher``; the data and its provenance:
``training/README.md``) and kept in ``matcher_weights.json`` beside this module. Identifiers
are no feature: a shared one joins records before any title is read, and one of a kind that
disagrees keeps them apart (``pair_features``), whatever the trees say.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from lyra_crawl.papers.pair_features import GROUP_FEATURES
from lyra_crawl.papers.title_links import TITLE_FEATURES

__all__ = ["FEATURES", "WEIGHTS_FILE", "Matcher", "Tree", "trained_matcher"]

FEATURES = TITLE_FEATURES + GROUP_FEATURES
WEIGHTS_FILE = "matcher_weights.json"
_LEAF = -1


@dataclass(frozen=True)
class Tree:
    """One regression tree as parallel lists by node (node 0 the root): the feature a node
    reads (its position in FEATURES, ``-1`` for a leaf), the threshold, the node next when the
    value is at most the threshold (``below``) and when above, and each leaf's value."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    below: tuple[int, ...]
    above: tuple[int, ...]
    value: tuple[float, ...]

    def __call__(self, values: Sequence[float]) -> float:
        node = 0
        feature, threshold = self.feature, self.threshold
        while feature[node] != _LEAF:
            if values[feature[node]] <= threshold[node]:
                node = self.below[node]
            else:
                node = self.above[node]
        return self.value[node]


@dataclass(frozen=True)
class Matcher:
    """Trees whose sum with ``base`` is the log-odds of one paper, and the probability from
    which the matcher says so."""

    base: float
    trees: tuple[Tree, ...]
    threshold: float
    # The threshold as log-odds: the same decision as the probability's, without exp.
    _cut: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError(f"matcher: threshold must be in (0, 1) (got {self.threshold})")
        object.__setattr__(self, "_cut", math.log(self.threshold / (1 - self.threshold)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Matcher:
        """A matcher from its parameters as the training writes them: ``features`` (FEATURES,
        in order), ``base``, ``trees`` (each node's ``feature`` named, ``null`` for a leaf)
        and ``threshold``."""
        if list(data["features"]) != list(FEATURES):
            raise ValueError(
                f"matcher weights: features {list(data['features'])} are not {list(FEATURES)};"
                " retrain with `make train-matcher`"
            )
        position = {name: n for n, name in enumerate(FEATURES)}
        trees = tuple(
            Tree(
                tuple(_LEAF if name is None else position[name] for name in tree["feature"]),
                tuple(map(float, tree["threshold"])),
                tuple(map(int, tree["below"])),
                tuple(map(int, tree["above"])),
                tuple(map(float, tree["value"])),
            )
            for tree in data["trees"]
        )
        return cls(float(data["base"]), trees, float(data["threshold"]))

    def score(self, values: Sequence[float]) -> float:
        """The log-odds that the values of FEATURES are one paper's."""
        return self.base + sum(tree(values) for tree in self.trees)

    def probability(self, values: Sequence[float]) -> float:
        return 1 / (1 + math.exp(-self.score(values)))

    def same_paper(self, values: Sequence[float]) -> bool:
        return self.score(values) >= self._cut


@lru_cache(maxsize=1)
def trained_matcher() -> Matcher:
    """The matcher whose trees ship with the package."""
    text = resources.files(__package__).joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return Matcher.from_json(json.loads(text))
