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
from collections.abc import Callable, Mapping, Sequence
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
        return _leaf(self.feature, self.threshold, self.below, self.above, self.value, values)

    def leaves(self) -> list[float]:
        return [value for node, value in enumerate(self.value) if self.feature[node] == _LEAF]


@dataclass(frozen=True)
class Matcher:
    """Trees whose sum with ``base`` is the log-odds of one paper, and the probability from
    which the matcher says so."""

    base: float
    trees: tuple[Tree, ...]
    threshold: float
    # The threshold as log-odds: the same decision as the probability's, without exp.
    _cut: float = field(init=False, repr=False, compare=False)
    # After each tree, the least and the most the trees after it can add: a decision is known
    # as soon as no later tree can change it (most pairs are decided well before the last).
    _least_after: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _most_after: tuple[float, ...] = field(init=False, repr=False, compare=False)
    # same_paper's reading of the trees, compiled once (`_compiled_decision`).
    _decide: Callable[[Sequence[float]], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError(f"matcher: threshold must be in (0, 1) (got {self.threshold})")
        object.__setattr__(self, "_cut", math.log(self.threshold / (1 - self.threshold)))
        least, most = ([0.0], [0.0]) if self.trees else ([], [])
        for tree in reversed(self.trees[1:]):
            leaves = tree.leaves()
            least.append(least[-1] + min(leaves))
            most.append(most[-1] + max(leaves))
        object.__setattr__(self, "_least_after", tuple(reversed(least)))
        object.__setattr__(self, "_most_after", tuple(reversed(most)))
        object.__setattr__(self, "_decide", _compiled_decision(self))

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
        total = self.base
        for tree in self.trees:
            total += tree(values)
        return total

    def probability(self, values: Sequence[float]) -> float:
        return 1 / (1 + math.exp(-self.score(values)))

    def same_paper(self, values: Sequence[float]) -> bool:
        """Whether the score reaches the threshold, the trees read only until it is sure."""
        return self._decide(values)


def _leaf(
    feature: tuple[int, ...],
    threshold: tuple[float, ...],
    below: tuple[int, ...],
    above: tuple[int, ...],
    value: tuple[float, ...],
    values: Sequence[float],
) -> float:
    """The value of the leaf a tree's nodes lead the values to (a function, not a method: the
    matcher reads a hundred trees for each pair of groups)."""
    node = 0
    while (read := feature[node]) != _LEAF:
        node = below[node] if values[read] <= threshold[node] else above[node]
    return value[node]


def _compiled_decision(matcher: Matcher) -> Callable[[Sequence[float]], bool]:
    """`same_paper` as one Python function compiled from the trees: each tree a nested
    conditional expression, its sum checked after each tree against the least and the most the
    later trees can add. The same comparisons and sums in the same order as reading the trees
    node by node (`_leaf`; thresholds and values written by `repr`, which reads back the same
    float), without a loop and a call per tree: a pair of groups reads about 70 trees, and the
    in-memory merge of 100k records judges ~27,000 pairs."""
    cut = repr(matcher._cut)
    lines = ["def decide(values):", f"    total = {matcher.base!r}"]
    for tree, least, most in zip(
        matcher.trees, matcher._least_after, matcher._most_after, strict=True
    ):
        lines.append(f"    total += {_expression(tree, 0)}")
        lines.append(f"    if total + {least!r} >= {cut}: return True")
        lines.append(f"    if total + {most!r} < {cut}: return False")
    lines.append(f"    return total >= {cut}")
    namespace: dict[str, Any] = {"inf": math.inf, "nan": math.nan}
    exec(compile("\n".join(lines), f"<{WEIGHTS_FILE} trees>", "exec"), namespace)
    return namespace["decide"]


def _expression(tree: Tree, node: int) -> str:
    """A tree from `node` on as a Python expression of `values`."""
    read = tree.feature[node]
    if read == _LEAF:
        return repr(tree.value[node])
    below, above = _expression(tree, tree.below[node]), _expression(tree, tree.above[node])
    return f"({below} if values[{read}] <= {tree.threshold[node]!r} else {above})"


@lru_cache(maxsize=1)
def trained_matcher() -> Matcher:
    """The matcher whose trees ship with the package."""
    text = resources.files(__package__).joinpath(WEIGHTS_FILE).read_text(encoding="utf-8")
    return Matcher.from_json(json.loads(text))
