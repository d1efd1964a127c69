"""Author names as merge evidence: surnames, the words of a name, and tolerant surname matching.

Pure. Records name authors in every shape: "Given Family", "Family, Given", "Family GA" (PubMed),
"G. Family" or "GA Family" (Google Scholar), lower-cased and accented or not, mis-encoded
("MÃ¼ller"), the list in any order, a name cut short ("Gibbon" for "Gibbons") or misspelt
("Goldring" for "Golding"). Two surnames are the same when they are equal after folding;
otherwise they must start with the same letter and be equal but for a transliterated umlaut
("Pöss", "Poess"), or, five letters long at least, one be the start of the other or the two one
edit apart.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

from rapidfuzz.distance import Levenshtein

__all__ = ["author_names", "fold_name", "name_words", "same_surname", "surname"]

_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})
_NON_LETTER = re.compile(r"[^a-z]+")
_NAME_WORD = re.compile(r"[a-z]{2,}")
# German transliterations: "Pöss" folds to "poss" while another source writes "Poess".
_UMLAUT_SPELLING = re.compile(r"(?<=[a-z])([aou])e")
# Shorter surnames differ by one letter too often (Chen/Chan, Date/Data) to be called the same.
_MIN_TOLERANT_LENGTH = 5


def fold_name(text: str) -> str:
    """Lower-case ASCII letters and spaces: entities decoded, text mis-encoded as another
    encoding's characters repaired ("JÃ¶rg" for "Jörg", ``ftfy.fix_encoding``), accents
    dropped, ß as ss."""
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii():
        # Imported with the first name that is not ASCII, as in title_normalization._fold.
        from ftfy import fix_encoding

        text = fix_encoding(text)
        decomposed = unicodedata.normalize("NFKD", text.replace("ß", "ss"))
        text = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NON_LETTER.sub(" ", text.lower()).split())


def author_names(authors: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """The folded surnames of an author list, and all words of its names longer than an
    initial (given names and surnames alike)."""
    return {family for family in map(surname, authors) if family}, name_words(authors)


def name_words(authors: tuple[str, ...]) -> set[str]:
    """All folded words of an author list's names longer than an initial."""
    text = " ".join(authors)
    folded = text.lower() if text.isascii() and "&" not in text else fold_name(text)
    return set(_NAME_WORD.findall(folded))


# The same names come again and again: in every record of their authors, at each step of a save.
# Sized as identifiers._normalized_identifiers is.
@lru_cache(maxsize=1 << 13)
def surname(author: str) -> str | None:
    """Folded surname from "Given Family", "Family, Given", "Family GA" or "family g"."""
    if "," in author:
        family = author.split(",", 1)[0]
    else:
        parts = [p for p in author.split() if p.strip(".").lower() not in _NAME_SUFFIXES]
        if not parts:
            return None
        last = parts[-1].strip(".")
        # "Smith JA" and "smith j": initials after the family name (PubMed, some lists).
        initials = len(parts) > 1 and (
            (last.isupper() and len(last) <= 3) or (len(last) == 1 and last.isalpha())
        )
        family = parts[0] if initials else parts[-1]
    if family.isascii() and family.isalpha():
        return family.lower()
    return fold_name(family).replace(" ", "") or None


def same_surname(a: str, b: str) -> bool:
    """Whether two folded surnames name the same person, allowing a transliterated umlaut, a
    name cut short and one typo."""
    if a == b:
        return True
    if a[0] != b[0]:  # a misspelt or shortened name keeps its first letter
        return False
    a, b = _UMLAUT_SPELLING.sub(r"\1", a), _UMLAUT_SPELLING.sub(r"\1", b)
    if a == b:
        return True
    if min(len(a), len(b)) < _MIN_TOLERANT_LENGTH:
        return False
    if a.startswith(b) or b.startswith(a):
        return True
    return Levenshtein.distance(a, b, score_cutoff=1) <= 1
