"""Author names, as the stores keep them (display names: "Jane Smith", PubMed's "Smith J"),
split into the parts the export formats name. Pure.

The split is BibTeX's own (first, von, last, jr; bibtexparser's implementation), so
"Ludwig van Beethoven" has the family "van Beethoven". PubMed writes a name as the family name
and the initials ("Smith JR"): read as "Smith, JR". A name BibTeX would not read as one person
(braces, a backslash, the word "and", more than two commas) is kept whole, a literal name.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts

# PubMed's form: a family name, then up to three capital initials.
_INITIALS_LAST = re.compile(r"^(?P<family>[^,]+?) (?P<initials>[A-Z]{1,3})$")
# Most names, told at once to need none of author_name's checks: two or more words (one space
# apart), each starting with a capital A-Z, none of them "and" in any case, the last not PubMed's
# initials, and no comma, brace or backslash.
_PLAIN = re.compile(
    r"(?:(?!(?i:and) )[A-Z][^ ,{}\\]* )+(?![A-Z]{1,3}$)(?!(?i:and)$)[A-Z][^ ,{}\\]*"
)


class AuthorName(NamedTuple):
    """One author: `family` (with its particle, e.g. "van Beethoven"), `given`, `suffix`
    ("Jr."); a literal name (an organisation, a name BibTeX cannot split) has only `literal`."""

    family: str = ""
    given: str = ""
    suffix: str = ""
    particle: str = ""
    literal: str = ""

    @property
    def family_name(self) -> str:
        """The family name with its particle."""
        return f"{self.particle} {self.family}" if self.particle else self.family

    def inverted(self) -> str:
        """ "Family, Given" (RIS's form; "Family, Given, Suffix" with a suffix); a literal name
        as it is."""
        if self.literal:
            return self.literal
        if self.particle or self.suffix or not (self.family and self.given):
            return ", ".join(filter(None, (self.family_name, self.given, self.suffix)))
        return f"{self.family}, {self.given}"


def _unsplittable(name: str) -> bool:
    """Whether BibTeX would not read `name` as one person's name."""
    return (
        "{" in name
        or "}" in name
        or "\\" in name
        or name.count(",") > 2
        or " and " in f" {name.lower()} "
    )


def _capitalised(initials: str) -> bool:
    """Whether every word starts with a capital letter (not a digit, a mark or a letter of a
    script without case: the library decides those)."""
    return all(map(str.isupper, initials))


@functools.lru_cache(maxsize=4096)
def author_name(display: str) -> AuthorName:
    """`display` split into its parts; whitespace runs become one space."""
    words = display.split()
    name = " ".join(words)
    if _PLAIN.fullmatch(name) is None:
        if _unsplittable(name):
            return AuthorName(literal=name)
        pubmed = _INITIALS_LAST.match(name)
        if not words or "," in name or not _capitalised("".join([word[0] for word in words])):
            return _split(f"{pubmed['family']}, {pubmed['initials']}" if pubmed else name)
        if pubmed:
            # BibTeX's split of "Family, JR" when the family's words are capitalised.
            return AuthorName(pubmed["family"], pubmed["initials"])
    # What BibTeX's split gives a name of capitalised words and no comma (most names),
    # without its character-by-character scan: the last word is the family name.
    return AuthorName(words[-1], " ".join(words[:-1]))


def _split(name: str) -> AuthorName:
    """`name` split by BibTeX's rules (the library's scan)."""
    try:
        parts = parse_single_name_into_parts(name)
    except InvalidNameError:
        return AuthorName(literal=name)
    if not parts.last:
        return AuthorName(literal=name)
    return AuthorName(
        family=" ".join(parts.last),
        given=" ".join(parts.first),
        suffix=" ".join(parts.jr),
        particle=" ".join(parts.von),
    )
