"""Records damaged the way records scraped from a scholarly search engine are, seeded.

A clean record (DBLP's) becomes what a results page of a scholarly search engine shows of the
same paper, with the kinds of damage such pages are known for, each with its own probability:

* the year missing from the record, or only inside the venue ("VLDB 2001");
* the title cut short at its end (mid-word or at "…") or at its start, its subtitle dropped,
  letters damaged as OCR damages them ("rn" for "m", "1" for "l", a word split or two
  run together, a hyphenated line break), a citation fragment glued on after it (venue, year,
  authors), a result label or a bracket marker before it ("[CITATION]"), or another paper's
  author names and year at its start; its case changed;
* the author list garbled: mis-encoded characters (UTF-8 read as Latin-1), given names where
  surnames belong, one name for the list, names run together, initials before surnames;
* the venue abbreviated to a fragment, carrying the year, or missing.

``scholar_copies`` gives the damaged copy of each record; the truth is the record it copies.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace

from lyra_crawl.papers.records import PaperRecord

__all__ = ["scholar_copies", "scholar_copy"]

# Letters OCR confuses, both ways.
_OCR_CONFUSIONS = (
    ("m", "rn"),
    ("rn", "m"),
    ("l", "1"),
    ("i", "l"),
    ("e", "c"),
    ("o", "0"),
    ("fi", ""),
    ("ti", "ri"),
    ("h", "b"),
    ("u", "n"),
)
_MARKERS = ("[CITATION] ", "[BOOK] ", "[PDF] ", "[C] ", "[HTML] ", "(PDF) ")
_SUBTITLE = re.compile(r"\s*(?::|\s-\s|\?)\s*")


def scholar_copies(
    records: Sequence[PaperRecord], *, seed: int, others: Sequence[PaperRecord] = ()
) -> list[PaperRecord]:
    """A damaged copy of each record, seeded; ``others`` lend their author names and words (a
    record's own when empty)."""
    rng = random.Random(seed)
    donors = list(others) or list(records)
    return [scholar_copy(rng, record, donors) for record in records]


def scholar_copy(
    rng: random.Random, record: PaperRecord, donors: Sequence[PaperRecord]
) -> PaperRecord:
    """One record as a scholarly search engine's results page might show it."""
    year = record.year
    venue = _venue(rng, record.venue, year)
    if rng.random() < 0.55:
        year = None
    return replace(
        record,
        source="scholar",
        kind="serp",
        title=_title(rng, record, donors),
        authors=_authors(rng, record.authors),
        venue=venue,
        year=year,
    )


def _title(rng: random.Random, record: PaperRecord, donors: Sequence[PaperRecord]) -> str:
    title = record.title
    if rng.random() < 0.10 and _SUBTITLE.search(title):
        title = _SUBTITLE.split(title, maxsplit=1)[0]  # subtitle dropped
    roll = rng.random()
    words = title.split()
    if roll < 0.12 and len(words) > 4:
        kept = max(3, round(len(words) * rng.uniform(0.5, 0.85)))
        title = " ".join(words[:kept])
        if rng.random() < 0.5:
            title = title[: -rng.randint(1, 3)]  # cut inside its last word
        elif rng.random() < 0.5:
            title += " …"
    elif roll < 0.17 and len(words) > 5:
        title = " ".join(words[rng.randint(1, 2) :])  # its start lost
    if rng.random() < 0.25:
        title = _ocr(rng, title)
    roll = rng.random()
    if roll < 0.10:
        title += _citation(rng, record)
    elif roll < 0.16:
        donor = rng.choice(donors)
        names = ", ".join(_initialled(name) for name in donor.authors[:2])
        title = f"{names} {donor.year or ''} {title}"  # another paper's citation before it
    if rng.random() < 0.10:
        title = rng.choice(_MARKERS) + title
    if rng.random() < 0.3:
        title = title.lower()
    return title


def _ocr(rng: random.Random, title: str) -> str:
    """One or two damages of the kinds OCR makes."""
    for _ in range(rng.randint(1, 2)):
        words = title.split()
        if not words:
            return title
        position = rng.randrange(len(words))
        word = words[position]
        roll = rng.random()
        if roll < 0.55:
            found = [(a, b) for a, b in _OCR_CONFUSIONS if a in word]
            if found:
                a, b = rng.choice(found)
                word = word.replace(a, b, 1)
        elif roll < 0.7 and len(word) > 5:
            cut = rng.randrange(2, len(word) - 2)
            word = f"{word[:cut]} {word[cut:]}"  # a word split
        elif roll < 0.85 and position + 1 < len(words):
            word += words.pop(position + 1)  # two words run together
        elif len(word) > 6:
            cut = rng.randrange(3, len(word) - 3)
            word = f"{word[:cut]}- {word[cut:]}"  # a line break's hyphen
        words[position] = word
        title = " ".join(words)
    return title


def _citation(rng: random.Random, record: PaperRecord) -> str:
    """A citation fragment after the title: its authors, venue or year."""
    parts = []
    if record.authors and rng.random() < 0.5:
        parts.append(", ".join(_initialled(name) for name in record.authors[:3]))
    if record.venue and rng.random() < 0.7:
        parts.append(" ".join(record.venue.split()[: rng.randint(1, 4)]))
    if record.year and rng.random() < 0.6:
        parts.append(str(record.year))
    if not parts:
        parts.append("et al")
    return rng.choice((" - ", ", ", " ", ". ")) + ", ".join(parts)


def _authors(rng: random.Random, authors: tuple[str, ...]) -> tuple[str, ...]:
    if not authors or rng.random() < 0.08:
        return ()
    roll = rng.random()
    if roll < 0.06:
        return tuple(name.split()[0] for name in authors)  # given names for surnames
    if rng.random() < 0.6:
        authors = tuple(_initialled(name) for name in authors)
    if roll < 0.14:
        return tuple(_mis_encoded(name) for name in authors)
    if roll < 0.22:
        return (authors[0],)  # one name for the list
    if roll < 0.28:
        return ("".join(", ".join(authors).split()),)  # run together as one name
    if roll < 0.34:
        return (", ".join(authors),)  # the list as one name
    return authors


def _initialled(name: str) -> str:
    """ "Jeffrey F. Naughton" as a results page of a scholarly search engine shows it: "JF
    Naughton"."""
    words = name.replace(".", " ").split()
    if len(words) < 2:
        return name
    return "".join(word[0].upper() for word in words[:-1]) + " " + words[-1]


def _mis_encoded(text: str) -> str:
    """UTF-8 bytes read as Latin-1 ("MÃ¼ller"), for a name that is not plain ASCII."""
    return text.encode("utf-8").decode("latin-1") if not text.isascii() else text


def _venue(rng: random.Random, venue: str | None, year: int | None) -> str | None:
    roll = rng.random()
    if venue is None or roll < 0.25:
        return None
    if roll < 0.5:
        venue = " ".join(venue.split()[: rng.randint(1, 3)])  # a fragment of its name
    if year and rng.random() < 0.35:
        venue = f"{venue} {year}" if rng.random() < 0.7 else f"{venue}, {year} - dl.acm.org"
    return venue
