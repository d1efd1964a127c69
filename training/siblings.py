"""Different papers titled alike, seeded: a record's title with one content word replaced.

Titles of different papers often differ in one word only: the place ("… in the Alps", "… in
the Andes"), the method, the object ("A framework for clustering evolving data streams", "A
framework for diagnosing …"). Labelled sets hold few such pairs, so the matcher would learn
that two long titles differing in one word are one paper as they are after a typo. A sibling
of a record is another paper: the same title but one content word (not its first) replaced by
a word of another record's title, the same year and venue, and no authors or another record's
(``siblings``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

from lyra_crawl.papers.records import PaperRecord
from lyra_crawl.papers.titles import STOPWORDS

__all__ = ["siblings"]

# Words this long are content words of a title, not its glue.
_MIN_WORD = 4


def siblings(records: Sequence[PaperRecord], *, seed: int) -> list[PaperRecord]:
    """A sibling of each record whose title has content words to replace (records without
    one are left out)."""
    rng = random.Random(seed)
    words = sorted(
        {
            word
            for record in records
            for word in record.title.split()
            if len(word) >= _MIN_WORD and word.isalpha() and word.lower() not in STOPWORDS
        }
    )
    found = []
    for record in records:
        title = record.title.split()
        places = [
            n
            for n, word in enumerate(title)
            if n and len(word) >= _MIN_WORD and word.isalpha() and word.lower() not in STOPWORDS
        ]
        if not places:
            continue
        place = rng.choice(places)
        title[place] = rng.choice(words)
        authors = rng.choice(records).authors if rng.random() < 0.5 else ()
        found.append(replace(record, title=" ".join(title), authors=authors, source="sibling"))
    return found
