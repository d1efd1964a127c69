"""Aligning two noisy titles word by word: where they agree, and what each has beyond that. Pure.

Web results and scraped records carry more than the title: a citation around it ("... Binto
George, Jayant Haritsa - SIGMOD Conference 1997", "... - ScienceDirect"), words run together
("deeplearning for ..."), a letter dropped or doubled. ``align_start`` reads two normalised
titles (word tuples) from their first words while they agree, allowing those faults, and says
how many words of each it covered; the words after that are each title's *extra*: a citation,
a subtitle, or another title.
"""

from __future__ import annotations

import re

from rapidfuzz.distance import Levenshtein

__all__ = ["align_start", "extra_years", "is_year", "one_letter_apart"]

_YEAR = re.compile(r"(?:1[89]|20)\d\d")
# One typo is only read as one in words this long ("bandwith"); shorter words differ by one
# letter and mean something else ("data", "date").
_MIN_TYPO_LENGTH = 5


def is_year(word: str) -> bool:
    return len(word) == 4 and _YEAR.fullmatch(word) is not None


def extra_years(words: tuple[str, ...]) -> set[int]:
    """Years named in a title's extra words, as a citation after the title shows them."""
    return {int(word) for word in words if is_year(word)}


def align_start(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[int, int]:
    """Words of ``a`` and of ``b`` that agree from the start: equal words, words run together
    ("deeplearning" for "deep learning") and one typo after the first letter of a long word
    each count as agreeing. Titles whose first letters differ agree on no word."""
    i = j = 0
    while i < len(a) and j < len(b):
        x, y = a[i], b[j]
        if x == y:
            i, j = i + 1, j + 1
        elif run := _run_together(x, b, j):
            i, j = i + 1, j + run
        elif run := _run_together(y, a, i):
            i, j = i + run, j + 1
        elif min(len(x), len(y)) >= _MIN_TYPO_LENGTH and _one_typo(x, y):
            i, j = i + 1, j + 1
        else:
            break
    return i, j


def one_letter_apart(x: str, y: str) -> bool:
    """Whether two words of letters differ in one letter dropped, added or changed, wherever it
    is: a typo, not another word, in words that already sit in the same place of two similar
    titles (numbers differ in meaning, not spelling)."""
    return x.isalpha() and y.isalpha() and Levenshtein.distance(x, y, score_cutoff=1) <= 1


def _run_together(word: str, words: tuple[str, ...], start: int) -> int:
    """How many words from ``words[start]`` on spell ``word`` when joined (0 when none do)."""
    joined = ""
    for end in range(start, len(words)):
        joined += words[end]
        if len(joined) >= len(word):
            return end - start + 1 if joined == word and end > start else 0
    return 0


def _one_typo(x: str, y: str) -> bool:
    """One letter dropped, added or changed, the first letter kept."""
    return x[0] == y[0] and Levenshtein.distance(x, y, score_cutoff=1) <= 1
