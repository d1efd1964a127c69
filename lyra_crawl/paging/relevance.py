"""Relevance of search results to their query, and the harvest rate that pagination stops on.

Each result's title + snippet is scored against the query with BM25 (k1, b from
`RelevanceConfig`) over the corpus of results gathered so far for that query: the corpus grows
page by page and IDF comes from the results seen up to and including the page being scored.
Scores of earlier pages are not revised; harvest is a per-page signal.

BM25 is written here rather than taken from bm25s or rank-bm25 because both index a fixed corpus
at construction (a growing corpus would be re-indexed on every page), and the normalisation
below needs each query term's IDF, which bm25s does not expose. The corpus is one query's
results (at most a few hundred short documents), so a few counters suffice; only document
frequencies of query terms and the total token count are kept.

IDF is Lucene's `ln(1 + (N - n + 0.5) / (n + 0.5))`, never negative. The classic Okapi IDF turns
negative for terms in more than half the documents, and in a corpus of on-topic results those
are exactly the query's own terms.

Scores are made comparable across queries, so one threshold fits all, by blending two parts in
[0, 1] (weight `coverage_weight` on the first):

- coverage: the share of the query's distinct terms the result contains;
- normalised BM25: the BM25 score divided by that of a reference result of average length
  containing every query term once, capped at 1.

Normalised BM25 alone fails on focused result sets: a query term that every result contains
gets an IDF near zero, so results matching it score near zero however on-topic they are.
Coverage keeps them relevant. Its cost is the opposite error: a result sharing only function
words with a long query ("of", "the") can pass. For a stop rule that is the safe error: a page
stops the crawl only when almost none of its results pass, so it errs towards fetching more.

Tokens: NFKC, casefold, then runs of letters, digits and combining marks as words (any script
that separates words with spaces; underscores and punctuation split words), and character
bigrams over runs of Han, Hiragana, Katakana and Hangul, which are written without spaces (a
one-character run is kept as a unigram). Thai, Lao and Khmer runs stay whole words.
"""

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby

from lyra_crawl.quoting import show

_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3005),  # ideographic iteration mark 々
    (0x3007, 0x3007),  # ideographic number zero 〇
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FA),  # Katakana, without the middle dot U+30FB that separates words
    (0x30FC, 0x30FF),  # Katakana prolonged sound mark and iteration marks
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul Syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x3FFFF),  # CJK Unified Ideographs Extensions B onwards
)

_CJK = "cjk"
_WORD = "word"


@lru_cache(maxsize=65536)  # tokenizing is per character: each distinct one is classed once
def _char_class(char: str) -> str | None:
    code = ord(char)
    if any(low <= code <= high for low, high in _CJK_RANGES):
        return _CJK
    if unicodedata.category(char)[0] in "LMN":
        return _WORD
    return None


_ASCII_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Split text into words, and CJK runs into character bigrams."""
    if text.isascii():
        # NFKC leaves ASCII alone and its letters and digits are its only word characters.
        return _ASCII_WORD.findall(text.lower())
    tokens: list[str] = []
    normalised = unicodedata.normalize("NFKC", text).casefold()
    for kind, chars in groupby(normalised, key=_char_class):
        run = "".join(chars)
        if kind == _WORD:
            tokens.append(run)
        elif kind == _CJK:
            if len(run) == 1:
                tokens.append(run)
            else:
                tokens.extend(run[i : i + 2] for i in range(len(run) - 1))
    return tokens


@dataclass(frozen=True)
class RelevanceConfig:
    threshold: float = 0.2
    k1: float = 1.5
    b: float = 0.75
    coverage_weight: float = 0.5

    def __post_init__(self) -> None:
        for name in ("threshold", "b", "coverage_weight"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"relevance {name} must be between 0 and 1 (got {show(value)})")
        if not self.k1 >= 0.0:
            raise ValueError(
                f"relevance k1 must be >= 0 (got {show(self.k1)}); 1.2 to 2.0 is usual"
            )


class RelevanceScorer:
    """Scores one query's results page by page against the corpus of its results so far."""

    def __init__(self, query: str, config: RelevanceConfig = RelevanceConfig()) -> None:
        self.config = config
        self.query_terms = tuple(dict.fromkeys(tokenize(query)))
        if not self.query_terms:
            raise ValueError(
                f"query {show(query)} has no words to score results against; "
                f"pass a query with at least one letter or digit"
            )
        self._doc_count = 0
        self._token_count = 0
        self._doc_freq: Counter[str] = Counter()

    def score_page(self, docs: Sequence[tuple[str, str]]) -> list[float]:
        """Add (title, snippet) results to the corpus, then score each in [0, 1]."""
        terms = self.query_terms
        # Each result as its length in tokens and the frequency of each query term in it.
        documents = []
        for title, snippet in docs:
            tokens = tokenize(f"{title} {snippet}")
            documents.append((len(tokens), [tokens.count(term) for term in terms]))
        for length, frequencies in documents:
            self._doc_count += 1
            self._token_count += length
            self._doc_freq.update(term for term, tf in zip(terms, frequencies, strict=True) if tf)
        if not documents:
            return []
        # The corpus is the same for every result of the page.
        idfs = [self._idf(term) for term in terms]
        average_length = self._token_count / self._doc_count or 1.0
        return [
            self._score(length / average_length, frequencies, idfs)
            for length, frequencies in documents
        ]

    def is_relevant(self, score: float) -> bool:
        return score >= self.config.threshold

    def _idf(self, term: str) -> float:
        n = self._doc_freq[term]
        return math.log(1.0 + (self._doc_count - n + 0.5) / (n + 0.5))

    def _score(self, length_ratio: float, frequencies: list[int], idfs: list[float]) -> float:
        """BM25 of one result against a reference result, blended with its query-term
        coverage; `length_ratio` is its length over the average (zero only when every result
        so far is empty, and such a result matches nothing)."""
        k1, b = self.config.k1, self.config.b
        bm25 = 0.0
        matched = 0
        for tf, idf in zip(frequencies, idfs, strict=True):
            if tf:
                matched += 1
                bm25 += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length_ratio))
        # A reference result (tf 1, average length) has a term-frequency part of exactly 1.
        reference = sum(idfs)
        coverage = matched / len(frequencies)
        weight = self.config.coverage_weight
        return weight * coverage + (1.0 - weight) * min(1.0, bm25 / reference)


def harvest_rate(scores: Sequence[float], threshold: float) -> float:
    """Share of a page's results whose score reaches `threshold`; an empty page gives 0.0."""
    if not scores:
        return 0.0
    return sum(1 for score in scores if score >= threshold) / len(scores)
