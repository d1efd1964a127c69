"""The labelled paper records the matcher is trained and checked on, as the merge reads them.

Two families of public sets (their provenance: ``training/data/README.md``):

* **DBLP-ACM** (``shared_dir/er``): the Leipzig tables and their perfect mapping
  (``dblp_acm``), and Magellan's labelled candidate pairs of the same records, structured and
  "dirty" (values moved into the title), each in train/valid/test splits (``magellan_pairs``);
* **Cora** (``training/data/cora.csv``): 1,295 citations of 112 machine-learning papers as
  they appear in reference lists, segmented into fields, each labelled with its paper
  (``cora``);

and the project's own simulator (``simulated``): the papers of 7 queries' citation graphs as
its results pages and APIs show them, titled alike ("<Query>: <topic> of <subject> <number>"),
labelled by the simulator's ground truth (``benchmarks.simulated_papers``).

A set is its records and its truth: the paper of each record (``entities``, every record
labelled), or labelled pairs of records (``pairs``, for candidate pairs as Magellan ships them),
and the years apart its records of one paper may be (``year_tolerance``, the index's own
parameter): DBLP and ACM date a paper by its proceedings or issue, so a year apart there is
another version (a journal's, a demo's), and Cora mostly labels it so too (21 judgements of one
paper a year apart against 347 of two); they are judged as the index judges with
``year_tolerance=0``, where a year apart never merges: the matcher learns what years that agree
within the tolerance say, and the tolerance stays the user's to set.
"""

from __future__ import annotations

import csv
import pathlib
import re
from dataclasses import dataclass, replace

from benchmarks.simulated_papers import QUERIES, paper_records
from lyra_crawl.papers.records import PaperRecord

__all__ = [
    "CORA",
    "NOISY_DEV_SET",
    "LabelledSet",
    "cora",
    "dblp_acm",
    "dblp_acm_records",
    "magellan_pairs",
    "noisy_dev_records",
    "serialized_record",
    "simulated",
]

HERE = pathlib.Path(__file__).resolve().parent
CORA = HERE / "data" / "cora.csv"
NOISY_DEV_SET = HERE.parent / "tests" / "data" / "er" / "dirty_dblp_acm_test_head.txt"

_DITTO_FIELD = re.compile(r"COL (\w+) VAL")
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)")
# Cora's author lists: "a. blum, m. furst, and r. lipton." or "blum, a., furst, m., & rudich, s."
_AUTHOR_SEPARATORS = re.compile(r"\s*(?:;|,?\s+and\s+|,?\s*&\s*)\s*|\s*,\s*")
_INITIALS = re.compile(r"^(?:[a-z]\.?\s*){1,3}$")
# The paper's number the simulator ends a title with, before an API's "." or label.
_NUMBER_AT_END = re.compile(r" \d+(?=\.?$| \(extended abstract\)$)")


@dataclass(frozen=True)
class LabelledSet:
    """Records with their truth: the paper each is (``entities``), or labelled pairs of them
    (``pairs``: positions in ``records`` and whether they are one paper)."""

    name: str
    records: list[PaperRecord]
    entities: list[str] | None = None
    pairs: list[tuple[int, int, bool]] | None = None
    year_tolerance: int = 1


def dblp_acm_records(folder: pathlib.Path) -> list[PaperRecord]:
    """DBLP2's records, then ACM's (their ids as ``source_id``)."""
    return [
        _bibliographic_record(source, row)
        for source, name in (("dblp", "DBLP2.csv"), ("acm", "ACM.csv"))
        for row in _read_table(folder / name)
    ]


def dblp_acm(folder: pathlib.Path) -> LabelledSet:
    """The Leipzig DBLP-ACM tables: a record of each table is one paper with the record of the
    other its perfect mapping pairs it with, and no other."""
    records = dblp_acm_records(folder)
    with open(folder / "DBLP-ACM_perfectMapping.csv", newline="", encoding="utf-8") as handle:
        acm_paper = {row[1]: row[0] for row in csv.reader(handle) if row}
    entities = [
        acm_paper.get(record.source_id or "", f"acm:{record.source_id}")
        if record.source == "acm"
        else record.source_id or ""
        for record in records
    ]
    return LabelledSet("dblp_acm", records, entities=entities, year_tolerance=0)


def magellan_pairs(path: pathlib.Path) -> LabelledSet:
    """One of Magellan's labelled pair files (Ditto's serialisation, DBLP left, ACM right)."""
    records, labelled = noisy_dev_records(path)
    position = {key: n for n, key in enumerate(records)}
    pairs = [(position[a], position[b], match) for a, b, match in labelled]
    name = path.parent.name + "/" + path.stem
    return LabelledSet(name, list(records.values()), pairs=pairs, year_tolerance=0)


NoisyKey = tuple[str, str]


def noisy_dev_records(
    path: pathlib.Path,
) -> tuple[dict[NoisyKey, PaperRecord], list[tuple[NoisyKey, NoisyKey, bool]]]:
    """A file of labelled pairs in Ditto's serialisation (two entries ``COL name VAL value ...``
    and a 0/1 label per line, DBLP left, ACM right): its distinct records by (source, entry),
    and its labelled pairs of them."""
    records: dict[NoisyKey, PaperRecord] = {}
    labelled = []
    for line in path.read_text(encoding="utf-8").splitlines():
        left, right, label = line.split("\t")
        keys = []
        for source, entry in (("dblp", left.strip()), ("acm", right.strip())):
            records.setdefault((source, entry), serialized_record(source, entry))
            keys.append((source, entry))
        labelled.append((keys[0], keys[1], label == "1"))
    return records, labelled


def serialized_record(source: str, entry: str) -> PaperRecord:
    """A record from one entry of Ditto's serialisation."""
    parts = _DITTO_FIELD.split(entry)[1:]
    fields = {name: value.strip() for name, value in zip(parts[::2], parts[1::2], strict=True)}
    year = fields.get("year", "")
    return PaperRecord(
        source=source,
        title=fields["title"],
        year=int(float(year)) if year else None,
        authors=tuple(a.strip() for a in fields.get("authors", "").split(" , ") if a.strip()),
        venue=fields.get("venue") or None,
    )


def cora(path: pathlib.Path = CORA) -> LabelledSet:
    """Cora's citations, each labelled with its paper (columns: 2 the paper, 3 authors, 4 a
    fragment of the venue, 5 title, 7 venue, 10 year)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))[1:]
    records = [
        PaperRecord(
            source="cora",
            title=row[4],
            authors=_cora_authors(row[2]),
            venue=row[6] or row[3] or None,
            year=int(found.group(1)) if (found := _YEAR.search(row[9])) else None,
            source_id=str(number),
        )
        for number, row in enumerate(rows)
    ]
    return LabelledSet("cora", records, entities=[row[1] for row in rows], year_tolerance=0)


def simulated() -> LabelledSet:
    """The simulator's papers of a third of the queries of ``benchmarks.simulated_papers``
    (one topic of each subject; the benchmark counts the errors of all of them), each record
    labelled with its query and paper number. The simulator ends each title with the
    paper's number, which real titles do not: it is dropped, so that the papers are told apart
    by the words of their titles, as real ones must be (titles naming different numbers are
    never linked anyway, ``title_links.numbers_differ``)."""
    records: list[PaperRecord] = []
    entities: list[str] = []
    for query in QUERIES[::3]:
        shown, numbers = paper_records(query)
        records += [replace(record, title=_NUMBER_AT_END.sub("", record.title)) for record in shown]
        entities += [f"{query}:{number}" for number in numbers]
    return LabelledSet("simulated", records, entities=entities)


def _cora_authors(text: str) -> tuple[str, ...]:
    """A reference list's authors as names: initials after a family name ("blum, a.") stay
    with it."""
    names: list[str] = []
    for part in _AUTHOR_SEPARATORS.split(text.strip().rstrip(".,:")):
        part = part.strip()
        if not part:
            continue
        if names and _INITIALS.match(part) and "," not in names[-1] and " " not in names[-1]:
            names[-1] = f"{names[-1]}, {part}"
        else:
            names.append(part)
    return tuple(names)


def _read_table(path: pathlib.Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _bibliographic_record(source: str, row: dict[str, str]) -> PaperRecord:
    year = row["year"].strip()
    return PaperRecord(
        source=source,
        title=row["title"],
        year=int(year) if year.isdigit() else None,
        authors=tuple(a.strip() for a in row["authors"].split(",") if a.strip()),
        venue=row["venue"].strip() or None,
        source_id=row["id"],
    )
