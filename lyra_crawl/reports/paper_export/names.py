"""Author names, as the stores keep them (display names: "Jane Smith", PubMed's "Smith J"),
split into the parts the export formats name. Pure.

The split is BibTeX's own (first, von, last, jr; bibtexparser's implementation), so
"Ludwig van Beethoven" has the family "van Beethoven". PubMed writes a name as the family name
and the initials ("Smith JR"): read as "Smith, JR". A name BibTeX would not read as one person
(braces, a backslash, the word "and", more than two commas) is kept whole, a literal name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bibtexparser.middlewares.names import InvalidNameError, parse_single_name_into_parts

# PubMed's form: a family name, then up to three capital initials.
_INITIALS_LAST = re.compile(r"^(?P<family>[^,]+?) (?P<initials>[A-Z]{1,3})$")
_UNSPLITTABLE = re.compile(r"[{}\\]|\band\b", re.IGNORECASE)


@dataclass(frozen=True)
class AuthorName:
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
        return " ".join(filter(None, (self.particle, self.family)))

    def inverted(self) -> str:
        """ "Family, Given" (RIS's form; "Family, Given, Suffix" with a suffix); a literal name
        as it is."""
        if self.literal:
            return self.literal
        return ", ".join(filter(None, (self.family_name, self.given, self.suffix)))


def author_name(display: str) -> AuthorName:
    """`display` split into its parts; whitespace runs become one space."""
    name = " ".join(display.split())
    if _UNSPLITTABLE.search(name) or name.count(",") > 2:
        return AuthorName(literal=name)
    if pubmed := _INITIALS_LAST.match(name):
        name = f"{pubmed['family']}, {pubmed['initials']}"
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
