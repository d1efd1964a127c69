"""Facets a question names, the documents they keep, and their carry-over in a conversation. Pure.

The vocabulary is data (engines.yaml `retrieval.facets`, lyra_crawl.config.retrieval): a year
facet reads "since 2020", "2015-2019", "in 2021"...; a term facet knows each value's phrases
("on arXiv" -> source=arxiv); a pattern facet reads its value with a regular expression
("published in Nature" -> venue contains Nature). The phrases are taken out of the text that is
searched, so "papers from 2021 on peat fires" searches "papers on peat fires" among 2021+.

A question that names no facet keeps the facets of the previous question of its conversation
(`Conversations`); one that names any uses only those. When the facets keep no document, the
decision says which facet matched nothing and which values the documents have instead. The
filter itself is the one `scrapy export-papers` applies too (lyra_crawl.papers.facets).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from lyra_crawl.config import FacetRule
from lyra_crawl.papers.facets import FacetFilter, FacetValue, keeps
from lyra_crawl.retrieval.documents import Document

_YEAR = r"(?:1[89]|20)\d\d"
_RANGE = re.compile(
    rf"\b(?:(?:from|between)\s+)?(?P<low>{_YEAR})\s*(?:-|–|—|to|and)\s*(?P<high>{_YEAR})\b",
    re.IGNORECASE,
)
# How many values of a facet the documents have that a "matched nothing" note lists.
_SHOWN_VALUES = 8


@dataclass(frozen=True)
class FacetDecision:
    """What the facet stage did: facets named or carried, the search text, what they kept."""

    named: tuple[FacetFilter, ...]
    carried: tuple[FacetFilter, ...]
    search_text: str
    kept: int
    total: int
    note: str = ""

    @property
    def applied(self) -> tuple[FacetFilter, ...]:
        return self.named or self.carried

    def describe(self) -> str:
        if not self.applied:
            return f"no facet: all {self.total} documents"
        how = "named" if self.named else "carried from the conversation"
        facets = ", ".join(f.describe() for f in self.applied)
        text = f"{facets} ({how}): {self.kept} of {self.total} documents"
        return f"{text}; {self.note}" if self.note else text


def detect(question: str, rules: Mapping[str, FacetRule]) -> tuple[tuple[FacetFilter, ...], str]:
    """The facets `question` names, and the question without the phrases that named them."""
    found: list[FacetFilter] = []
    spans: list[tuple[int, int]] = []
    for name, rule in rules.items():
        field = rule.document_field or name
        if rule.kind == "year":
            year, year_spans = _year_filter(question, name, field, rule)
            found.extend([year] if year else [])
            spans.extend(year_spans)
            continue
        matches = _named_values(question, rule)
        if matches:
            values = tuple(dict.fromkeys(value for value, _, _ in matches))
            phrase = "; ".join(question[start:end] for _, start, end in matches)
            found.append(FacetFilter(name, field, rule.match, values, phrase=phrase))
            spans.extend((start, end) for _, start, end in matches)
    return tuple(found), _without(question, spans)


def _named_values(question: str, rule: FacetRule) -> list[tuple[str, int, int]]:
    if rule.kind == "term":
        return [
            (value, match.start(), match.end())
            for value, phrases in rule.values.items()
            for match in _phrases(phrases).finditer(question)
        ]
    return [
        (match.group("value"), match.start(), match.end())
        for pattern in rule.patterns
        for match in re.finditer(pattern, question)
        if match.group("value")
    ]


@lru_cache(maxsize=256)
def _phrases(phrases: tuple[str, ...]) -> re.Pattern[str]:
    words = (r"\s+".join(map(re.escape, phrase.split())) for phrase in phrases)
    return re.compile(rf"\b(?:{'|'.join(words)})\b", re.IGNORECASE)


def _year_filter(
    question: str, name: str, field: str, rule: FacetRule
) -> tuple[FacetFilter | None, list[tuple[int, int]]]:
    low: int | None = None
    high: int | None = None
    spans: list[tuple[int, int]] = []
    for match in _RANGE.finditer(question):
        low, high = sorted((int(match["low"]), int(match["high"])))
        spans.append(match.span())
    bounds = (
        (rule.since, 0, "low"),
        (rule.after, 1, "low"),
        (rule.until, 0, "high"),
        (rule.before, -1, "high"),
        (rule.exact, 0, "both"),
    )
    for words, shift, bound in bounds:
        if not words:
            continue
        pattern = rf"{_phrases(words).pattern}\s+(?P<year>{_YEAR})\b"
        for match in re.finditer(pattern, question, re.IGNORECASE):
            if any(s <= match.start() < e for s, e in spans):
                continue
            year = int(match["year"]) + shift
            low = year if bound in ("low", "both") else low
            high = year if bound in ("high", "both") else high
            spans.append(match.span())
    if low is None and high is None:
        return None, []
    phrase = "; ".join(question[s:e] for s, e in sorted(spans))
    return FacetFilter(name, field, "year", low=low, high=high, phrase=phrase), spans


def _without(question: str, spans: list[tuple[int, int]]) -> str:
    kept, last = [], 0
    for start, end in sorted(spans):
        if start >= last:
            kept.append(question[last:start])
            last = end
    kept.append(question[last:])
    return re.sub(r"\s+", " ", " ".join(kept)).strip()


def decide(
    named: tuple[FacetFilter, ...],
    carried: tuple[FacetFilter, ...],
    search_text: str,
    documents: Sequence[Document],
) -> tuple[FacetDecision, list[bool]]:
    """The decision and, per document, whether the applied facets keep it."""
    applied = named or carried
    kept = [keeps(applied, doc.facets) for doc in documents] if applied else [True] * len(documents)
    count = sum(kept)
    note = _why_nothing(applied, documents) if applied and not count else ""
    decision = FacetDecision(named, carried, search_text, count, len(documents), note)
    return decision, kept


def _why_nothing(applied: Sequence[FacetFilter], documents: Sequence[Document]) -> str:
    """Which facet keeps no document, and the values the documents have for it."""
    for facet in applied:
        if any(facet.accepts(doc.facets.get(facet.field)) for doc in documents):
            continue
        present = sorted(
            {str(v) for doc in documents for v in _values(doc.facets.get(facet.field))}
        )
        if not present:
            return f"no document has a {facet.field} to match {facet.describe()}"
        more = ", ..." if len(present) > _SHOWN_VALUES else ""
        shown = ", ".join(present[:_SHOWN_VALUES]) + more
        return f"no document matches {facet.describe()} (their {facet.field}: {shown})"
    return "no document matches all of " + ", ".join(f.describe() for f in applied)


def _values(value: FacetValue | None) -> tuple[str | int, ...]:
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (value,)


class ConversationError(ValueError):
    """A conversation's saved facets cannot be read; the message says which file and the fix."""


class Conversations(Protocol):
    """The facets each conversation's last question applied, for the next one to carry."""

    def previous(self, name: str) -> tuple[FacetFilter, ...]: ...

    def remember(self, name: str, facets: tuple[FacetFilter, ...]) -> None: ...


class ConversationsInMemory:
    """Conversations of one process (the Python API, `scrapy select --questions`)."""

    def __init__(self) -> None:
        self._last: dict[str, tuple[FacetFilter, ...]] = {}

    def previous(self, name: str) -> tuple[FacetFilter, ...]:
        return self._last.get(name, ())

    def remember(self, name: str, facets: tuple[FacetFilter, ...]) -> None:
        self._last[name] = facets


class ConversationsInFolder:
    """Conversations across `scrapy select` runs: one small JSON file per conversation."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def _path(self, name: str) -> Path:
        safe = re.sub(r"[^\w.-]", "_", name)
        return self._folder / f"{safe}.json"

    def previous(self, name: str) -> tuple[FacetFilter, ...]:
        path = self._path(name)
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            return tuple(
                FacetFilter(**{**facet, "values": tuple(facet.get("values", ()))})
                for facet in saved
            )
        except FileNotFoundError:
            return ()
        except (OSError, ValueError, TypeError) as exc:
            raise ConversationError(
                f"conversation {name!r}: {path} cannot be read ({exc}): delete it to start the "
                "conversation anew"
            ) from None

    def remember(self, name: str, facets: tuple[FacetFilter, ...]) -> None:
        self._folder.mkdir(parents=True, exist_ok=True)
        path = self._path(name)
        path.write_text(json.dumps([asdict(f) for f in facets]), encoding="utf-8")
