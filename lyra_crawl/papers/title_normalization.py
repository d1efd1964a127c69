"""A title as the paper merge compares it, and the titles it never merges by. Pure.

``normalize_title`` folds what sources do differently to one title (entities, mis-encoded
characters, accents, case,
punctuation, a results page's "[PDF]" before it and its "..." where the page cut it short, a
venue's label such as "(tutorial)"). Some titles name no one paper (``is_generic_title``:
"Editorial", "Book reviews", …) and some name another item about a paper (``title_qualifier``:
"Erratum: X", "X, part II"): the merge keeps those apart whatever their similarity.
"""

from __future__ import annotations

import html
import re
import unicodedata

__all__ = ["GENERIC_START", "is_generic_title", "normalize_title", "title_qualifier"]

# Labels that venues put in or around a title for the kind of contribution, not its subject:
# "X (Tutorial)", "X (panel session): Y", "Tutorial: X", "X: a tutorial", "X (abstract only)".
_LABEL = (
    r"(?:tutorial|demo|demonstration|poster|panel|keynote|abstract|work in progress"
    r"|(?:invited|extended|short|full|experience|position|industrial|preliminary)"
    r"\s+(?:session|abstract|paper|version|talk|address|track|report))"
    r"(?:\s+(?:session|abstract|description|summary|discussion|only|paper|version|talk|address"
    r"|track|report))*"
)
_LABEL_WORD = re.compile(
    r"tutorial|demo|poster|panel|keynote|abstract|invited|extended|short|full|experience"
    r"|position|industrial|preliminary|work in progress"
)
_NOISE_LABELS = (
    re.compile(rf"\s*[(\[]\s*{_LABEL}\s*[)\]]"),
    re.compile(r"^\s*(?:tutorial|panel|keynote|demo|demonstration|poster)\s*(?:on\b|:|-)\s*"),
    re.compile(rf"\s*[:\-\u2013\u2014?.!,]\s*(?:an?\s+)?{_LABEL}\s*\.?\s*$"),
)
_NON_WORD = re.compile(r"[\W_]+")
# Google Scholar puts the kind of a result before its title: "[PDF] ", "[BOOK] [B] ", "[C] ".
_RESULT_LABELS = re.compile(r"^(?:\s*\[[a-z]{1,8}\])+\s*")
# A results page cuts a long title short ("... sleep : A ... - ScienceDirect"); NFKD makes "…"
# three dots. What follows the cut is the site's name, not the title.
_SHORTENED = re.compile(r"\s*\.\.\..*$")

# Front matter and recurring columns: the same title names many different items.
_GENERIC_TITLE = re.compile(
    r"(?:guest |the )?editorials?(?: notes?| comments?)?"
    r"|(?:guest |the )?(?:editor|chair|president|treasurer|secretary|organizer)(?: s|s)?"
    r" (?:notes?|messages?|introduction|column|letter|corner|foreword|preface|remarks|welcome)"
    r"|(?:a )?(?:letters?|message|note|welcome) (?:from|to) the (?:editors?|chairs?|president)"
    r"|from the editors?|book reviews?(?: column)?|reviews?|preface|foreword|introduction"
    r"|keynote(?: address| talk| speech)?|invited talks?|panel(?: discussion| session)?"
    r"|errat(?:a|um)|corrigend(?:a|um)|corrections?|retraction(?: notice)?|in memoriam"
    r"|obituary|(?:reminiscences on )?influential papers|news|announcements?"
    r"|call for (?:papers|participation)|reports?|acknowledge?ments?|(?:list of )?reviewers"
    r"|referees|(?:author )?index|(?:table of )?contents|front matter|back matter|masthead"
    r"|opening remarks|closing remarks|abstracts|articles|columns?|letters|correspondence"
)

# A generic title, alone or at the start of a longer one.
GENERIC_START = re.compile(rf"(?:{_GENERIC_TITLE.pattern})(?= |$)")

# Notices about a paper are other items than the paper: "Erratum: X" never merges with "X".
_NOTICE = re.compile(
    r"^(?:an? )?(?:errat(?:a|um)|corrigend(?:a|um)|addendum|correction|retraction"
    r"|expression of concern|comments? on|reply to|response to|rebuttal)\b"
)
# "X, part I" and "X, part II" are two papers although their titles score 99.
_PART = re.compile(r"\b(?:part|vol|volume|chapter)\s+(\w+)")


def normalize_title(title: str) -> str:
    """Title for comparison: entities decoded, NFKD without accents, lower-case, a results
    page's "[PDF]" before it and whatever follows "..." (where the page cut it short) dropped,
    venue labels such as "(tutorial)" removed, punctuation to spaces, whitespace folded."""
    text = _fold(title)
    if "[" in text:
        text = _RESULT_LABELS.sub("", text)
    if "..." in text:
        text = _SHORTENED.sub("", text)
    for pattern in _NOISE_LABELS if _LABEL_WORD.search(text) else ():
        stripped = pattern.sub("", text)
        if _NON_WORD.sub("", stripped):  # a title that is only a label ("Panel") stays whole
            text = stripped
    return " ".join(_NON_WORD.sub(" ", text).split())


def is_generic_title(normalized: str) -> bool:
    """Whether a normalised title names front matter or a column rather than one paper."""
    return _GENERIC_TITLE.fullmatch(normalized) is not None


def title_qualifier(normalized_title: str) -> tuple[str, frozenset[str]]:
    """The notice kind ("erratum", "reply to", …) and the part numbers a normalised title
    names: two titles merge only when theirs are equal."""
    notice = _NOTICE.match(normalized_title)
    parts = frozenset(_PART.findall(normalized_title))
    return (notice.group(0) if notice else "", parts)


def _fold(text: str) -> str:
    """Lower-case text with HTML entities decoded, text mis-encoded as another encoding's
    characters repaired ("SchrÃ¶dinger", ``ftfy.fix_encoding``) and accents dropped (NFKD)."""
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        return text.lower()
    # Imported with the first text that is not ASCII (ftfy takes tens of milliseconds to load):
    # a process that meets none, as many crawls and commands, never loads it.
    from ftfy import fix_encoding

    decomposed = unicodedata.normalize("NFKD", fix_encoding(text))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()
