"""The simulator's citation graph: which paper cites which, the same every run. Pure.

Each query has its own graph over `PaperKey(query, number)`:

- corpus papers, numbers 0 .. CORPUS_SIZE - 1: result number `number` of the query
  (corpus.make_result), whether or not an engine ever shows it (a query shows fewer than
  CORPUS_SIZE results with `--results-total` below it);
- outside papers, numbers OUTSIDE_BASE .. OUTSIDE_BASE + OUTSIDE_SIZE - 1: papers no engine
  shows for any query, reached only through the graph. Their metadata is make_result's for that
  number.

Edges (`references(key)`, in ascending number; `citations(key)` is their inverse, ascending):

- a corpus paper cites `randrange(6)` other corpus papers and `randrange(3)` outside papers,
  drawn in that order from `rng = random.Random(corpus.seed("references", query, number))`:
  `rng.sample(range(CORPUS_SIZE - 1), rng.randrange(6))` with every drawn number at or above
  its own shifted up by one, then `rng.sample(range(OUTSIDE_BASE, OUTSIDE_BASE +
  OUTSIDE_SIZE), rng.randrange(3))`; every even-numbered corpus paper also cites CLASSIC, the
  field's classic, so its citations run past 100 (two pages at Semantic Scholar's default
  limit);
- an outside paper cites `randrange(3)` outside papers numbered below it (fewer when fewer
  are below): `rng.sample(range(OUTSIDE_BASE, number), min(rng.randrange(3), number -
  OUTSIDE_BASE))` with the same `rng`;
- an *unmatched* outside paper (`unmatched(key)`: outside index n with n % 5 == 4) is a
  reference neither API could resolve: it cites nothing and has no record of its own.

How the APIs name the other end (lyra_crawl.simulator.engines.citation_pages):

- a cited paper with a preprint (papers.has_preprint: corpus numbers divisible by 10) is
  cited under its preprint's id: OpenAlex's preprint work (DOI 10.48550/arxiv.<id>) and a
  second Semantic Scholar record with the arXiv id and no DOI. Both are the same paper as the
  corpus one, under another id. Citing papers are always named by their own (main) id;
- an unmatched reference is, in Semantic Scholar, an entry whose paper has `paperId` null and
  only a title; OpenAlex leaves it out of `referenced_works` and of `filter=cited_by:`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

from lyra_crawl.simulator.corpus import seed

CORPUS_SIZE = 200
OUTSIDE_BASE = 1_000_000
OUTSIDE_SIZE = 40
CLASSIC = OUTSIDE_BASE
MAX_CORPUS_REFERENCES = 5
MAX_OUTSIDE_REFERENCES = 2


@dataclass(frozen=True, order=True)
class PaperKey:
    """One paper of one query's graph."""

    query: str
    number: int

    @property
    def outside(self) -> bool:
        return self.number >= OUTSIDE_BASE


def graph_papers(query: str) -> list[PaperKey]:
    """Every paper of the query's graph: the corpus, then the outside papers."""
    numbers = [*range(CORPUS_SIZE), *range(OUTSIDE_BASE, OUTSIDE_BASE + OUTSIDE_SIZE)]
    return [PaperKey(query, number) for number in numbers]


def unmatched(key: PaperKey) -> bool:
    """A reference no API resolved to a record of its own."""
    return key.outside and (key.number - OUTSIDE_BASE) % 5 == 4


def references(key: PaperKey) -> tuple[PaperKey, ...]:
    """The papers `key` cites, in ascending number."""
    return _edges(key.query)[0].get(key, ())


def citations(key: PaperKey) -> tuple[PaperKey, ...]:
    """The papers citing `key`, in ascending number."""
    return _edges(key.query)[1].get(key, ())


@lru_cache(maxsize=64)
def _edges(
    query: str,
) -> tuple[dict[PaperKey, tuple[PaperKey, ...]], dict[PaperKey, tuple[PaperKey, ...]]]:
    cited: dict[PaperKey, tuple[PaperKey, ...]] = {}
    citing: dict[PaperKey, list[PaperKey]] = {}
    for key in graph_papers(query):
        targets = sorted(PaperKey(query, number) for number in _cited_numbers(key))
        cited[key] = tuple(targets)
        for target in targets:
            citing.setdefault(target, []).append(key)
    return cited, {key: tuple(sorted(citers)) for key, citers in citing.items()}


def _cited_numbers(key: PaperKey) -> set[int]:
    if unmatched(key):
        return set()
    rng = random.Random(seed("references", key.query, key.number))
    outside = range(OUTSIDE_BASE, OUTSIDE_BASE + OUTSIDE_SIZE)
    if key.outside:
        below = range(OUTSIDE_BASE, key.number)
        return set(rng.sample(below, min(rng.randrange(MAX_OUTSIDE_REFERENCES + 1), len(below))))
    # Drawn from the other corpus numbers: those from its own number up are shifted by one.
    drawn = rng.sample(range(CORPUS_SIZE - 1), rng.randrange(MAX_CORPUS_REFERENCES + 1))
    numbers = {number + (number >= key.number) for number in drawn}
    numbers |= set(rng.sample(outside, rng.randrange(MAX_OUTSIDE_REFERENCES + 1)))
    if key.number % 2 == 0:
        numbers.add(CLASSIC)
    return numbers
