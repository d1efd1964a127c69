"""Aligning two noisy titles word by word: where they agree, and what each has beyond that. Pure.

Web results and scraped records carry more than the title: a citation around it ("... Binto
George, Jayant Haritsa - SIGMOD Conference 1997", "... - ScienceDirect"), words run together
("deeplearning for ..."), a letter dropped or doubled. ``align_start`` reads two normalised
titles (word tuples) from their first words while they agree, allowing those faults, and says
how many words of each it covered; the words after that are each title's *extra*: a citation,
a subtitle, or another title. The other functions read such extra words: where a citation
shows its names, venue or year (``leading``, ``citation_start``), the spellings of a name split
apart (``spellings``), and where two subtitles differ (``own_words``, ``differ``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rapidfuzz.distance import Levenshtein

__all__ = [
    "CITATION_START",
    "MIN_CONTAINED_WORDS",
    "STOPWORDS",
    "align_start",
    "citation_start",
    "content_words",
    "differ",
    "ends_other",
    "extra_years",
    "is_year",
    "leading",
    "one_letter_apart",
    "own_words",
    "spellings",
]

_YEAR = re.compile(r"(?:1[89]|20)\d\d")
# One typo is only read as one in words this long ("bandwith"); shorter words differ by one
# letter and mean something else ("data", "date").
_MIN_TYPO_LENGTH = 5

STOPWORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "is", "of", "on", "or"}
    | {"over", "the", "to", "towards", "toward", "under", "using", "via", "with", "without"}
)
# The shorter title needs this many content words for a subtitle match ("XML" is no evidence).
MIN_CONTAINED_WORDS = 3
# A citation after a title starts with a name, an initial, a venue or a year within its first
# three words ("J. Smith", "A. B. Smith", "Kun-Lung Wu", "Proc. VLDB").
CITATION_START = 3


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


def content_words(words: Iterable[str]) -> int:
    """How many of the words are not stop words."""
    return sum(word not in STOPWORDS for word in words)


def ends_other(words: tuple[str, ...], other_words: tuple[str, ...]) -> bool:
    """Whether one title ends the other, a subtitle (or label) before it."""
    short, long = sorted((words, other_words), key=len)
    if short[-1] != long[-1] or len(short) == len(long):
        return False
    if content_words(short) < MIN_CONTAINED_WORDS:
        return False
    return long[-len(short) :] == short


def leading(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words that are neither stop words nor initials: where a citation shows its names
    ("j widom"), venue or year."""
    return tuple(word for word in words if word not in STOPWORDS and not _is_initial(word))


def citation_start(words: tuple[str, ...]) -> tuple[str, ...]:
    """The words up to the first three that are neither stop words nor initials."""
    seen = 0
    for end, word in enumerate(words):
        if word not in STOPWORDS and not _is_initial(word):
            seen += 1
            if seen == CITATION_START:
                return words[: end + 1]
    return words


def spellings(words: tuple[str, ...]) -> set[str]:
    """The words, and each two or three next to each other run together."""
    return set(words) | _runs(words)


def own_words(extra: tuple[str, ...], other_extra: tuple[str, ...]) -> set[str]:
    """Content words of one title's extra words that the other's lack (neither show, nor run
    together, nor spell with a typo), but for initials and years: where two subtitles, or two
    citations, differ."""
    spelled = spellings(other_extra)
    return {
        word
        for word in leading(extra)
        if not is_year(word)
        and word not in spelled
        and not any(one_letter_apart(word, other) for other in other_extra)
    }


def differ(extra: tuple[str, ...], other_extra: tuple[str, ...]) -> bool:
    """Whether each of two subtitles has content words of its own."""
    return bool(own_words(extra, other_extra)) and bool(own_words(other_extra, extra))


def _runs(words: tuple[str, ...]) -> set[str]:
    """Each two or three words next to each other run together: a cited name may be split
    ("Ö zsu", "Galindo-Legaria") where an author field has it whole."""
    runs = (words[i : i + size] for size in (2, 3) for i in range(len(words) - size + 1))
    return set(map("".join, runs))


def _is_initial(word: str) -> bool:
    return len(word) == 1 and word.isalpha()


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
