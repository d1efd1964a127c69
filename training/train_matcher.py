"""Train the paper matcher's weights: ``python -m training.train_matcher [--shared DIR] [--check]``.

Reads the labelled sets of both families (``training.datasets``; DBLP-ACM's from ``DIR/er``,
default ``../shared``, or ``LYRA_SHARED_DIR``), turns each into the judgements the paper index
makes on it (``training.examples``), fits a logistic regression (scikit-learn, lbfgs: the same
data gives the same weights) and chooses the threshold on its probability, then writes
``lyra_crawl/papers/matcher_weights.json``: the weights by feature, the intercept, the
threshold, and what it was trained on (each set with its examples, matches and the sha256 of
its files). ``--check`` writes nothing: it trains again and fails when the result differs from
the committed file.

Each set weighs the same in the fit, however many judgements it gives, so that no one set's
kind of noise decides the weights. The threshold is the lowest at which the judgements of the
training sets reach ``PRECISION`` (precision is the constraint: a false merge loses a paper, a
missed one leaves a duplicate).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import numpy
import sklearn
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import StratifiedKFold, cross_val_predict

from lyra_crawl.papers.matcher import FEATURES, WEIGHTS_FILE, Matcher
from lyra_crawl.papers.records import PaperRecord
from training.datasets import CORA, LabelledSet, cora, dblp_acm, magellan_pairs, simulated
from training.examples import Examples, examples
from training.scholar_noise import scholar_copies
from training.siblings import siblings

__all__ = ["FAMILIES", "PRECISION", "family_sets", "fit", "main", "trained_parameters"]

REPO = pathlib.Path(__file__).resolve().parents[1]
# The simulator's corpus and citation graph: what its labelled papers are made of.
SIMULATOR = REPO / "lyra_crawl" / "simulator" / "corpus.py"
WEIGHTS_PATH = REPO / "lyra_crawl" / "papers" / WEIGHTS_FILE
FAMILIES = ("dblp_acm", "cora", "simulated")
# The share of the held-out judgements called "one paper" that must be one paper. Judgements
# are harder than papers (a group is judged again with each record that joins it): at this
# floor the papers of the development sets are 98-99 % precise.
PRECISION = 0.96
# The damaged copies of ACM's records the DBLP-ACM family trains on.
SCHOLAR_SEED = 38
_TREES = 100
_LEAVES = 8
_RATE = 0.1
# How the probability may move with each feature, whatever the data: never down with more title
# similarity, a shared author or years agreeing; never up with words before the shared part,
# subtitles that differ or authors listed and disjoint. Features left out may go either way.
_MONOTONIC = {
    "title_ratio": 1,
    "title_token_set": 1,
    "title_partial": 1,
    "title_joined": 1,
    "short_covered": 1,
    "long_covered": 1,
    "short_words": 1,
    "lead_words": -1,
    "years_agree": 1,
    "citation_read": 1,
    "subtitles_differ": -1,
    "author_shared": 1,
    "authors_disjoint": -1,
    "author_words": 1,
    "venue_overlap": 1,
}
_SEED = 0
_FOLDS = 5


def shared_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("LYRA_SHARED_DIR") or REPO.parent / "shared")


def family_sets(family: str, shared: pathlib.Path) -> list[tuple[LabelledSet, list[pathlib.Path]]]:
    """The labelled sets of a family with the files each is read from."""
    if family == "cora":
        return [(cora(), [CORA])]
    if family == "simulated":
        return [(simulated(), [SIMULATOR])]
    er = shared / "er"
    sets = [
        (magellan_pairs(path), [path])
        for path in (
            er / "magellan" / "structured_dblp_acm" / "train.txt",
            er / "magellan" / "dirty_dblp_acm" / "train.txt",
        )
    ]
    return [
        *sets,
        (scholar_set(er / "dblp_acm", seed=SCHOLAR_SEED, damaged="acm"), _leipzig(er)),
        (sibling_set(er / "dblp_acm", seed=SCHOLAR_SEED), _leipzig(er)),
    ]


def scholar_set(folder: pathlib.Path, *, seed: int, damaged: str) -> LabelledSet:
    """DBLP-ACM with one source's records damaged as a scholarly search engine shows them
    (``scholar_noise``), the other's clean: ``damaged`` is "acm" or "dblp"."""
    clean = dblp_acm(folder)
    assert clean.entities is not None
    copied = [n for n, record in enumerate(clean.records) if record.source == damaged]
    kept = [n for n, record in enumerate(clean.records) if record.source != damaged]
    copies = scholar_copies([clean.records[n] for n in copied], seed=seed)
    records: list[PaperRecord] = copies + [clean.records[n] for n in kept]
    entities = [clean.entities[n] for n in copied + kept]
    return LabelledSet(
        f"scholar_{damaged}_{seed}",
        records,
        entities=entities,
        year_tolerance=clean.year_tolerance,
    )


def sibling_set(folder: pathlib.Path, *, seed: int) -> LabelledSet:
    """DBLP's records beside their siblings (``training.siblings``): each one another paper."""
    dblp = [record for record in dblp_acm(folder).records if record.source == "dblp"]
    alike = siblings(dblp, seed=seed)
    records = dblp + alike
    entities = [str(n) for n in range(len(records))]
    return LabelledSet(f"siblings_{seed}", records, entities=entities, year_tolerance=0)


def fit(found: Examples) -> tuple[Matcher, dict[str, Any]]:
    """Trees from examples, each set weighing the same, with the threshold chosen on
    cross-validated probabilities; and the trees as the weights file keeps them."""
    rows = numpy.array(found.rows)
    labels = numpy.array(found.labels)
    per_set = {name: found.sets.count(name) for name in set(found.sets)}
    weights = numpy.array([1.0 / per_set[name] for name in found.sets]) * len(found.sets)
    model = _model().fit(rows, labels, sample_weight=weights)
    folds = StratifiedKFold(_FOLDS, shuffle=True, random_state=_SEED)
    held_out = cross_val_predict(
        _model(), rows, labels, cv=folds, method="predict_proba", params={"sample_weight": weights}
    )[:, 1]
    parameters = {
        "features": list(FEATURES),
        "base": float(model._baseline_prediction.ravel()[0]),
        "trees": [_tree(predictor.nodes) for (predictor,) in model._predictors],
        "threshold": _threshold(held_out, labels, weights),
        "held_out_curve": [
            {"threshold": cut, "precision": precision, "recall": recall}
            for cut, precision, recall in _curve(held_out, labels, weights)
        ],
    }
    matcher = Matcher.from_json(parameters)
    scores = numpy.array([matcher.score(row) for row in rows])
    if not numpy.allclose(scores, model.decision_function(rows), rtol=0, atol=1e-9):
        raise AssertionError("the trees as written do not score as scikit-learn's model does")
    return matcher, parameters


def _model() -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(
        max_iter=_TREES,
        max_leaf_nodes=_LEAVES,
        learning_rate=_RATE,
        monotonic_cst=[_MONOTONIC.get(name, 0) for name in FEATURES],
        early_stopping=False,
        random_state=_SEED,
    )


def _tree(nodes: Any) -> dict[str, list[Any]]:
    """A fitted tree (scikit-learn's predictor nodes) as parallel lists by node."""
    leaf = nodes["is_leaf"].astype(bool)
    return {
        "feature": [None if leaf[n] else FEATURES[f] for n, f in enumerate(nodes["feature_idx"])],
        "threshold": [0.0 if leaf[n] else float(t) for n, t in enumerate(nodes["num_threshold"])],
        "below": [int(n) for n in nodes["left"]],
        "above": [int(n) for n in nodes["right"]],
        "value": [float(v) if leaf[n] else 0.0 for n, v in enumerate(nodes["value"])],
    }


def _threshold(
    probabilities: numpy.ndarray, labels: numpy.ndarray, weights: numpy.ndarray
) -> float:
    """The probability at which the held-out judgements reach the best F1, their precision at
    least PRECISION."""
    best, chosen = -1.0, 0.5
    for cut, precision, recall in _curve(probabilities, labels, weights):
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if precision >= PRECISION and f1 > best:
            best, chosen = f1, cut
    return chosen


def _curve(
    probabilities: numpy.ndarray, labels: numpy.ndarray, weights: numpy.ndarray
) -> list[tuple[float, float, float]]:
    """(threshold, precision, recall) of the weighted judgements, thresholds 0.30 to 0.95."""
    curve = []
    for cut in numpy.arange(0.30, 0.96, 0.05):
        said = probabilities >= cut
        hits = float((weights * (said & labels)).sum())
        precision = hits / max(float((weights * said).sum()), 1e-9)
        recall = hits / float((weights * labels).sum())
        curve.append((round(float(cut), 2), round(precision, 4), round(recall, 4)))
    return curve


def trained_parameters(shared: pathlib.Path, families: Sequence[str] = FAMILIES) -> dict[str, Any]:
    """The matcher trained on the families' sets, as the weights file keeps it."""
    found = Examples()
    provenance = {}
    for family in families:
        for labelled, paths in family_sets(family, shared):
            judged = examples(labelled)
            found.extend(judged)
            provenance[labelled.name] = {
                "family": family,
                "records": len(labelled.records),
                "examples": len(judged.labels),
                "matches": sum(judged.labels),
                "files": {_shown(path, shared): _sha256(path) for path in paths},
            }
    _, parameters = fit(found)
    return {
        "model": (
            f"gradient-boosted trees, scikit-learn {sklearn.__version__}"
            f" HistGradientBoostingClassifier ({_TREES} trees of {_LEAVES} leaves, learning rate"
            f" {_RATE}, random_state {_SEED}), each set weighing the same"
        ),
        "command": "python -m training.train_matcher",
        "threshold_rule": (
            f"best F1 of {_FOLDS}-fold cross-validated probabilities with precision >= {PRECISION}"
        ),
        "monotonic": _MONOTONIC,
        "training_sets": provenance,
        **parameters,
    }


def _leipzig(er: pathlib.Path) -> list[pathlib.Path]:
    folder = er / "dblp_acm"
    return [folder / "DBLP2.csv", folder / "ACM.csv", folder / "DBLP-ACM_perfectMapping.csv"]


def _shown(path: pathlib.Path, shared: pathlib.Path) -> str:
    for root, name in ((REPO, ""), (shared, "shared/")):
        if path.is_relative_to(root):
            return name + str(path.relative_to(root))
    return str(path)


def _sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dumped(parameters: dict[str, Any]) -> str:
    """The parameters as JSON, a tree or a point of the curve a line."""
    lines = ["{"]
    for n, (name, value) in enumerate(parameters.items()):
        end = "," if n < len(parameters) - 1 else ""
        if isinstance(value, list) and value and isinstance(value[0], dict):
            items = [json.dumps(item, separators=(",", ":")) for item in value]
            lines.append(f" {json.dumps(name)}: [")
            lines += [f"  {item}," for item in items[:-1]] + [f"  {items[-1]}", f" ]{end}"]
        else:
            text = json.dumps(value, indent=1).replace("\n", "\n ")
            lines.append(f" {json.dumps(name)}: {text}{end}")
    return "\n".join([*lines, "}"]) + "\n"


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.train_matcher")
    parser.add_argument("--shared", type=pathlib.Path, default=shared_dir())
    parser.add_argument("--check", action="store_true", help="compare with the committed file")
    options = parser.parse_args(list(argv) if argv is not None else None)
    if not (options.shared / "er" / "dblp_acm").is_dir():
        print(
            f"train_matcher: no DBLP-ACM data in {options.shared / 'er'}: give the folder that"
            " holds er/ with --shared or LYRA_SHARED_DIR",
            file=sys.stderr,
        )
        return 2
    text = _dumped(trained_parameters(options.shared))
    if options.check:
        if WEIGHTS_PATH.read_text(encoding="utf-8") != text:
            print(f"train_matcher: {WEIGHTS_PATH} differs from a new training", file=sys.stderr)
            return 1
        print(f"train_matcher: {WEIGHTS_PATH} is what the training gives")
        return 0
    WEIGHTS_PATH.write_text(text, encoding="utf-8")
    print(f"train_matcher: wrote {WEIGHTS_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
