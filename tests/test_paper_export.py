"""`scrapy export-papers`: every export read back by readers the writers do not use.

Each format is read by its own library's parser (rispy, bibtexparser with the LaTeX decoded by
pylatexenc, the CSL-JSON schema with jsonschema, the csv module), and every paper and every
field is found as stored, changed only as the format's docstring says (RIS and BibTeX values on
one line, a separator inside a keyword made a space, …). A second reader per format — pybtex
for BibTeX, pybtex with pybtexris for RIS, citeproc-py for CSL-JSON, pandas for CSV — loads the
same file and counts the papers. Hostile records (braces, LaTeX's specials, line breaks in
abstracts, CJK and Arabic, 300 authors, nothing but a title) and a task crawled from the
simulator, through the real command.
"""

from __future__ import annotations

import csv
import gc
import io
import json
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import bibtexparser
import jsonschema
import pandas
import pybtex.database
import pytest
import pytest_twisted
import rispy
from bibtexparser.middlewares import SeparateCoAuthors, SplitNameParts
from bibtexparser.middlewares.names import parse_single_name_into_parts
from citeproc import Citation, CitationItem, CitationStylesBibliography, CitationStylesStyle
from citeproc import formatter as citeproc_formatter
from citeproc.source.json import CiteProcJSON
from hypothesis import assume, given
from hypothesis import strategies as st
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db

from lyra_crawl.papers.facets import chosen_facets, keeps, paper_facets
from lyra_crawl.records import FoundPaper, StoredPaper
from lyra_crawl.reports.paper_export import records
from lyra_crawl.reports.paper_export.names import AuthorName, author_name
from lyra_crawl.reports.paper_export.records import exported
from lyra_crawl.reports.paper_export.streaming import WRITERS
from tests.conftest import query_db, run_crawl, run_scrapy, scrapy_env

SCHEMA = json.loads((Path(__file__).parent / "data" / "csl" / "csl-data.json").read_text())
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
KEY = re.compile(r"[a-z0-9]+-(\d+)")


def one_line(text: str) -> str:
    return " ".join(text.split())


# -- the hostile records, each author with the name it must read back as ----------------------


def stored(paper_id: int, title: str, authors: dict[str, str], **fields: Any) -> StoredPaper:
    """A stored paper; `authors` map each name as stored to how it reads back: "Family, Given"
    (", Suffix" after), or a name kept whole (an organisation, one BibTeX cannot split)."""
    NAMES.update(authors)
    return StoredPaper(
        id=paper_id,
        title=title,
        normalized_title=title.lower(),
        attribution=fields.pop("attribution", "both"),
        authors=tuple(authors),
        **fields,
    )


NAMES: dict[str, str] = {}
HOSTILE = [
    FoundPaper(
        stored(
            11,
            "Braces {x} & \\emph{y}: 100% $5 #1 _a ~b ^c -- d ``q'' ?` <<e>> \x0bend",
            {
                "Ludwig van Beethoven": "van Beethoven, Ludwig",
                "Smith, Jr., John": "Smith, John, Jr.",
                "O'Brien, Seán": "O'Brien, Seán",
                "Jean-Luc Picard": "Picard, Jean-Luc",
                "Research and Development Group": "Research and Development Group",
                "{Weird} Name": "{Weird} Name",
                "Back\\slash Person": "Back\\slash Person",
                "50% & #1_Lab": "#1_Lab, 50% &",
                "Smith JR": "Smith, JR",
            },
            doi="10.1002/(SICI)1097-4636(199812)43:4<380::AID-JBM5>3.0.CO;2-I",
            arxiv_id="2101.00001v2",
            pmid="12345678",
            year=2020,
            venue="Journal of 50% & {Co}",
            abstract="First paragraph, with % and &.\n\nSecond\tline\r\nthird } { \\ ~ ^",
            sources=("bing", "openalex"),
            evidence="abstract",
            fetch_urls={"doi": "https://doi.org/10.1002/x;y{z}", "pdf": "https://p.example/a.pdf"},
        ),
        ("coastal flooding, sea-level rise", "storm\nsurge; 100%"),
        3,
    ),
    FoundPaper(
        stored(
            12,
            "海岸洪水のリスク評価：東京湾の事例",
            # BibTeX's split reads a Japanese name as given name first, as a Western one.
            {"王小明": "王小明", "山田 太郎": "太郎, 山田"},
            year=2021,
            venue="地理学評論",
            abstract="本研究は、海岸洪水のリスクを評価する。\n第二段落。",
            sources=("openalex",),
            attribution="api_only",
            evidence="abstract",
            fetch_urls={"landing": "https://example.jp/論文/1"},
        ),
        ("海岸 洪水",),
        1,
    ),
    FoundPaper(
        stored(
            13,
            "تقييم مخاطر الفيضانات الساحلية\u200f في دلتا النيل",
            {"محمد علي": "علي, محمد", "فاطمة الزهراء": "الزهراء, فاطمة"},
            year=2019,
            venue="مجلة الجغرافيا",
            abstract="دراسة عن الفيضانات.",
            sources=("semantic_scholar",),
            attribution="api_only",
            evidence="abstract",
            fetch_urls={"result": "https://example.eg/paper?id=3&lang=ar"},
        ),
        ("فيضانات",),
        7,
    ),
    FoundPaper(
        stored(
            14,
            "A paper with three hundred authors",
            {f"Ana{n} Pérez{n}": f"Pérez{n}, Ana{n}" for n in range(300)},
            year=2018,
            doi="10.5555/many",
            sources=("crossref", "openalex"),
            evidence="fetch",
            fetch_urls={"doi": "https://doi.org/10.5555/many"},
        ),
        ("consortium",),
        2,
    ),
    FoundPaper(stored(15, "Nothing but a title", {}, attribution="serp_only"), ("bare",), None),
]


def name_read(family: str, given: str, suffix: str = "") -> str:
    return ", ".join(filter(None, (family, given, suffix)))


# -- what every reader must find --------------------------------------------------------------


def expected(found: FoundPaper) -> dict[str, Any]:
    """The fields of `found` as the export carries them before a format's own rules."""
    paper = found.paper
    urls = paper.fetch_urls
    url = next(
        (urls[k] for k in ("landing", "doi", "arxiv", "pubmed", "result", "pdf") if k in urls), None
    )
    return {
        "title": CONTROL.sub("", paper.title),
        "authors": [NAMES[name] for name in paper.authors],
        "year": paper.year,
        "venue": paper.venue,
        "doi": paper.doi,
        "arxiv_id": paper.arxiv_id,
        "pmid": paper.pmid,
        "url": url,
        "abstract": paper.abstract,
        "keywords": list(found.queries),
        "sources": list(paper.sources),
        "attribution": paper.attribution,
        "first_rank": found.first_rank,
    }


def flattened(fields: dict[str, Any], keyword_mark: str | None = None) -> dict[str, Any]:
    """`fields` with every text on one line (RIS, BibTeX); with `keyword_mark`, that character
    inside a keyword a space."""
    text = {
        name: one_line(value) if isinstance(value, str) else value for name, value in fields.items()
    }
    mark = keyword_mark or "\0"
    text["keywords"] = [one_line(k.replace(mark, " ")) for k in fields["keywords"]]
    text["authors"] = [one_line(a) for a in fields["authors"]]
    return text


def export(papers: list[FoundPaper], form: str) -> str:
    out = io.StringIO()
    writer = WRITERS[form](out)
    writer.start()
    writer.write([exported(found) for found in papers])
    writer.finish()
    return out.getvalue()


def notes(lines: list[str]) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in lines)


def paper_id(key: str) -> int:
    match = KEY.fullmatch(key)
    assert match, key
    return int(match[1])


# -- each format's own reader -----------------------------------------------------------------


def read_ris(text: str) -> dict[int, dict[str, Any]]:
    read = {}
    for ref in rispy.loads(text):
        said = notes(ref.get("notes", []))
        read[paper_id(ref["id"])] = {
            "title": ref["title"],
            "authors": ref.get("authors", []),
            "year": int(ref["year"]) if "year" in ref else None,
            "venue": ref.get("secondary_title"),
            "doi": ref.get("doi"),
            "arxiv_id": said.get("arXiv"),
            "pmid": said.get("PMID"),
            "url": (ref.get("urls") or [None])[0],
            "abstract": ref.get("abstract"),
            "keywords": ref.get("keywords", []),
            "sources": said["sources"].split(", ") if "sources" in said else [],
            "attribution": said["attribution"],
            "first_rank": int(said["first rank"]) if "first rank" in said else None,
        }
    return read


def _latex_decoder() -> LatexNodes2Text:
    """LaTeX to text as LaTeX prints it (pylatexenc's defaults lack the brace commands)."""
    context = get_default_latex_context_db()
    context.add_context_category(
        "braces",
        prepend=True,
        macros=[
            MacroTextSpec("textbraceleft", "{"),
            MacroTextSpec("textbraceright", "}"),
            MacroTextSpec("textasciicircum", "^"),
        ],
    )
    return LatexNodes2Text(latex_context=context)


DECODE = _latex_decoder().latex_to_text


def read_bibtex(text: str) -> dict[int, dict[str, Any]]:
    library = bibtexparser.parse_string(
        text, append_middleware=[SeparateCoAuthors(), SplitNameParts()]
    )
    assert not library.failed_blocks, [block.error for block in library.failed_blocks]
    read = {}
    for entry in library.entries:
        fields = {name: field.value for name, field in entry.fields_dict.items()}
        said = dict(line.split(": ", 1) for line in DECODE(fields["annote"]).split("; "))
        authors = []
        for name in fields.get("author", []):
            family = DECODE(" ".join(name.von + name.last))
            authors.append(
                name_read(family, DECODE(" ".join(name.first)), DECODE(" ".join(name.jr)))
            )
        read[paper_id(entry.key)] = {
            "title": DECODE(fields["title"]),
            "authors": authors,
            "year": int(fields["year"]) if "year" in fields else None,
            "venue": DECODE(fields["journal"]) if "journal" in fields else None,
            "doi": fields.get("doi"),
            "arxiv_id": fields.get("eprint"),
            "pmid": fields.get("pmid"),
            "url": fields.get("url"),
            "abstract": DECODE(fields["abstract"]) if "abstract" in fields else None,
            "keywords": DECODE(fields["keywords"]).split(", ") if "keywords" in fields else [],
            "sources": said["sources"].split(", ") if "sources" in said else [],
            "attribution": said["attribution"],
            "first_rank": int(said["first rank"]) if "first rank" in said else None,
        }
    return read


def read_csljson(text: str) -> dict[int, dict[str, Any]]:
    items = json.loads(text)
    jsonschema.Draft7Validator(SCHEMA).validate(items)
    read = {}
    for item in items:
        said = notes(item["note"].split("\n"))
        authors = []
        for name in item.get("author", []):
            family = " ".join(filter(None, (name.get("non-dropping-particle"), name.get("family"))))
            authors.append(
                name.get("literal")
                or name_read(family, name.get("given", ""), name.get("suffix", ""))
            )
        assert item["citation-key"] == item["id"]
        read[paper_id(item["id"])] = {
            "title": item["title"],
            "authors": authors,
            "year": item["issued"]["date-parts"][0][0] if "issued" in item else None,
            "venue": item.get("container-title"),
            "doi": item.get("DOI"),
            "arxiv_id": said.get("arXiv"),
            "pmid": item.get("PMID"),
            "url": item.get("URL"),
            "abstract": item.get("abstract"),
            "keywords": item["keyword"].split(", ") if "keyword" in item else [],
            "sources": said["sources"].split(", ") if "sources" in said else [],
            "attribution": said["attribution"],
            "first_rank": int(said["first rank"]) if "first rank" in said else None,
        }
    return read


def read_csv(text: str) -> dict[int, dict[str, Any]]:
    read = {}
    for row in csv.DictReader(io.StringIO(text)):
        assert paper_id(row["key"]) == int(row["paper_id"])

        def listed(column: str, row: dict[str, str] = row) -> list[str]:
            return row[column].split("; ") if row[column] else []

        read[int(row["paper_id"])] = {
            "title": row["title"],
            "authors": listed("authors"),
            "year": int(row["year"]) if row["year"] else None,
            "venue": row["venue"] or None,
            "doi": row["doi"] or None,
            "arxiv_id": row["arxiv_id"] or None,
            "pmid": row["pmid"] or None,
            "url": row["url"] or None,
            "abstract": row["abstract"] or None,
            "keywords": listed("keywords"),
            "sources": listed("sources"),
            "attribution": row["attribution"],
            "first_rank": int(row["first_rank"]) if row["first_rank"] else None,
        }
    return read


def as_exported(found: FoundPaper, form: str) -> dict[str, Any]:
    """What `form`'s reader must find of `found`: the format's own rules applied."""
    fields = expected(found)
    if form == "ris":
        fields = flattened(fields)
        if fields["url"]:
            fields["url"] = fields["url"].replace(";", "%3B")
    elif form == "bibtex":
        fields = flattened(fields, ",")
        for name in ("url", "doi"):
            if fields[name]:
                fields[name] = fields[name].replace("{", "%7B").replace("}", "%7D")
    elif form == "csljson":
        fields["keywords"] = [one_line(k.replace(",", " ")) for k in fields["keywords"]]
    else:
        fields["keywords"] = [one_line(k.replace(";", " ")) for k in fields["keywords"]]
    return fields


READERS = {"ris": read_ris, "bibtex": read_bibtex, "csljson": read_csljson, "csv": read_csv}


# -- the second readers: each loads the file and counts the papers ----------------------------


def second_reader_count(text: str, form: str, authors: dict[str, int]) -> int:
    """How many papers a reader independent of the writer finds; checks each one's author
    count (`authors`, by citation key) where the reader reads authors."""
    if form in ("bibtex", "ris"):
        data = pybtex.database.parse_string(text, form)
        for key, entry in data.entries.items():
            assert len(entry.persons.get("author", [])) == authors[key], key
        return len(data.entries)
    if form == "csljson":
        with warnings.catch_warnings():
            # citeproc-py names the CSL variables it does not use (citation-key).
            warnings.simplefilter("ignore", UserWarning)
            source = CiteProcJSON(json.loads(text))
        style = CitationStylesStyle("harvard-cite-them-right", validate=False)
        bibliography = CitationStylesBibliography(style, source, citeproc_formatter.plain)
        for key in source:
            bibliography.register(Citation([CitationItem(key)]))
        rendered = bibliography.bibliography()
        assert all(str(entry).strip() for entry in rendered)
        return len(rendered)
    table = pandas.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert list(table["authors"].map(lambda a: len(a.split("; ")) if a else 0)) == [
        authors[key] for key in table["key"]
    ]
    return len(table)


# -- the tests --------------------------------------------------------------------------------


@pytest.mark.parametrize("form", list(WRITERS))
def test_hostile_records_are_read_back_whole_by_the_formats_own_reader(form: str) -> None:
    text = export(HOSTILE, form)

    read = READERS[form](text)

    assert sorted(read) == [found.paper.id for found in HOSTILE]
    for found in HOSTILE:
        assert read[found.paper.id] == as_exported(found, form), found.paper.id


@pytest.mark.parametrize("form", list(WRITERS))
def test_a_second_reader_loads_the_hostile_export_and_counts_every_paper(form: str) -> None:
    text = export(HOSTILE, form)
    authors = {exported(found).key: len(found.paper.authors) for found in HOSTILE}

    assert second_reader_count(text, form, authors) == len(HOSTILE)


def test_exporting_makes_no_reference_cycles() -> None:
    # export_papers turns the cyclic collector off while papers stream (its passes over the
    # whole process were a fifth of the time): what a page allocates goes by reference counts.
    while gc.collect():  # what earlier tests left: freeing a cycle can leave another
        pass
    gc.disable()
    try:
        for form in WRITERS:
            export(HOSTILE, form)
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_ris_values_that_look_like_tags_stay_in_their_field() -> None:
    # A line of RIS is a tag only at its start: a title quoting "ER  -" ends no reference.
    found = FoundPaper(
        stored(1, "TY  - JOUR\nER  - the end", {}, abstract="AU  - Nobody\nER  - "), ("q",), 1
    )

    (ref,) = rispy.loads(export([found], "ris"))

    assert (ref["title"], ref["abstract"]) == ("TY - JOUR ER - the end", "AU - Nobody ER -")
    assert "authors" not in ref


def test_citation_keys_are_unique_ascii_and_the_same_in_every_format_and_run() -> None:
    twins = [replace(HOSTILE[0], paper=replace(HOSTILE[0].paper, id=n)) for n in (21, 22)]
    keys = [exported(found).key for found in [*HOSTILE, *twins]]

    assert len(set(keys)) == len(keys)
    assert keys[:5] == [
        "beethoven2020braces-11",
        "2021-12",
        "2019-13",
        "perez02018paper-14",
        "nothing-15",
    ]
    for form in WRITERS:
        assert export(HOSTILE, form) == export(HOSTILE, form)
    assert [item["id"] for item in json.loads(export(HOSTILE, "csljson"))] == keys[:5]
    assert [ref["id"] for ref in rispy.loads(export(HOSTILE, "ris"))] == keys[:5]


# A word of a name: capitals and small letters, of scripts with case and without, marks.
NAME_WORD = st.text(alphabet="aAbBdDeEnNzZéÉøØßİı王山-'.", min_size=1, max_size=6)


@given(st.lists(NAME_WORD, min_size=1, max_size=5))
def test_a_name_splits_as_bibtex_splits_it(words: list[str]) -> None:
    # author_name reads most names without the library's scan: it must split them the same.
    name = " ".join(words)
    assume(" and " not in f" {name.lower()} " and not re.fullmatch(r".+ [A-Z]{1,3}", name))
    parts = parse_single_name_into_parts(name)

    assert author_name.__wrapped__(name) == AuthorName(
        family=" ".join(parts.last),
        given=" ".join(parts.first),
        suffix=" ".join(parts.jr),
        particle=" ".join(parts.von),
    )


@given(st.lists(NAME_WORD, min_size=1, max_size=4), st.from_regex(r"[A-Z]{1,3}", fullmatch=True))
def test_a_pubmed_name_splits_as_bibtex_splits_family_comma_initials(
    family: list[str], initials: str
) -> None:
    # "Smith JR" is read as "Smith, JR"; author_name reads most such names without the scan.
    name = " ".join([*family, initials])
    assume(" and " not in f" {name.lower()} ")
    parts = parse_single_name_into_parts(f"{' '.join(family)}, {initials}")

    assert author_name.__wrapped__(name) == AuthorName(
        family=" ".join(parts.last),
        given=" ".join(parts.first),
        suffix=" ".join(parts.jr),
        particle=" ".join(parts.von),
    )


@given(st.text(alphabet=" \t\n\r\x0b\x0c\x1c\x85\xa0\u2000\u2028\u3000a-"))
def test_one_line_makes_every_run_of_whitespace_one_space(text: str) -> None:
    assert records.one_line(text) == " ".join(text.split())


def test_facets_keep_the_papers_in_the_year_range_of_the_named_sources_and_kinds() -> None:
    papers = [found.paper for found in HOSTILE]

    def kept(**facets: Any) -> list[int]:
        return [p.id for p in papers if keeps(chosen_facets(**facets), paper_facets(p))]

    assert kept() == [11, 12, 13, 14, 15]
    assert kept(year_from=2019, year_to=2020) == [11, 13]
    assert kept(year_to=2018) == [14]
    assert kept(sources=frozenset({"openalex"})) == [11, 12, 14]
    assert kept(attributions=frozenset({"api_only", "serp_only"})) == [12, 13, 15]
    assert kept(evidence=frozenset({"fetch"}), sources=frozenset({"crossref"})) == [14]
    with pytest.raises(ValueError, match="year range 2021-2019 is empty"):
        chosen_facets(year_from=2021, year_to=2019)
    with pytest.raises(ValueError, match="unknown attribution 'web': use one of both"):
        chosen_facets(attributions=frozenset({"web"}))


# -- a task crawled from the simulator, through the command ------------------------------------

TASK_QUERIES = ("peat bogs", "tidal marsh")
SUFFIX = {"ris": "ris", "bibtex": "bib", "csljson": "json", "csv": "csv"}


def task_papers(db_path: Path, task: str) -> list[FoundPaper]:
    """The task's papers as the store has them, read with SQL of the test's own."""
    found = query_db(
        db_path,
        "SELECT item.paper_id, query.query_text, COALESCE(item.fused_rank, item.rank) AS rank"
        " FROM serp_items AS item JOIN queries AS query ON query.id = item.query_id"
        " WHERE query.task_id = ? AND item.paper_id IS NOT NULL ORDER BY query.id",
        (task,),
    )
    queries: dict[int, list[str]] = {}
    ranks: dict[int, int] = {}
    for row in found:
        texts = queries.setdefault(row["paper_id"], [])
        if row["query_text"] not in texts:
            texts.append(row["query_text"])
        ranks[row["paper_id"]] = min(row["rank"], ranks.get(row["paper_id"], row["rank"]))
    papers = []
    for paper_id in sorted(queries):
        (row,) = query_db(db_path, "SELECT * FROM papers WHERE id = ?", (paper_id,))
        paper = StoredPaper(
            id=row["id"],
            title=row["title"],
            normalized_title=row["normalized_title"],
            attribution=row["attribution"],
            doi=row["doi"],
            arxiv_id=row["arxiv_id"],
            pmid=row["pmid"],
            year=row["year"],
            authors=tuple(json.loads(row["authors"] or "[]")),
            venue=row["venue"],
            abstract=row["abstract"],
            sources=tuple(json.loads(row["sources"] or "[]")),
            evidence=row["evidence"],
            fetch_urls=json.loads(row["fetch_urls"] or "{}"),
        )
        papers.append(FoundPaper(paper, tuple(queries[paper_id]), ranks[paper_id]))
    return papers


def simple_names(papers: list[FoundPaper]) -> None:
    """The simulator's authors are "Given Family": register how each must read back."""
    for found in papers:
        for name in found.paper.authors:
            *given, family = name.split()
            NAMES.setdefault(name, name_read(family, " ".join(given)))


@pytest_twisted.ensureDeferred
async def test_a_simulated_tasks_papers_are_exported_whole_in_every_format(
    start_simulator, db_path, tmp_path: Path
):
    simulator = start_simulator("--results-total", "20")
    for query in TASK_QUERIES:
        await run_crawl(
            simulator,
            db_path,
            query=query,
            sources="serp,semantic_scholar,openalex",
            serp_max_pages=1,
            strategy="fixed",
            task_id="coasts",
        )
    papers = task_papers(db_path, "coasts")
    simple_names(papers)
    assert {q for found in papers for q in found.queries} == set(TASK_QUERIES)
    assert {found.paper.attribution for found in papers} >= {"both", "api_only"}
    env = scrapy_env(simulator, db_path)

    for form, suffix in SUFFIX.items():
        target = tmp_path / f"coasts.{suffix}"
        done = run_scrapy("export-papers", "--task", "coasts", "-o", str(target), env=env)
        assert done.returncode == 0, done.stderr
        assert f"wrote {len(papers)} of {len(papers)} papers of task 'coasts'" in done.stderr
        with target.open(encoding="utf-8", newline="") as written:
            text = written.read()

        read = READERS[form](text)
        assert sorted(read) == [found.paper.id for found in papers], form
        for found in papers:
            assert read[found.paper.id] == as_exported(found, form), (form, found.paper.id)
        authors = {exported(found).key: len(found.paper.authors) for found in papers}
        assert second_reader_count(text, form, authors) == len(papers), form
        again = run_scrapy("export-papers", "--task", "coasts", "--format", form, env=env)
        assert again.returncode == 0 and again.stdout == text, form


@pytest_twisted.ensureDeferred
async def test_the_command_keeps_the_papers_its_facets_name_and_refuses_bad_arguments(
    start_simulator, db_path, tmp_path: Path
):
    simulator = start_simulator("--results-total", "20")
    await run_crawl(
        simulator,
        db_path,
        query="peat bogs",
        sources="serp,semantic_scholar,openalex",
        serp_max_pages=1,
        strategy="fixed",
        task_id="coasts",
    )
    papers = [found.paper for found in task_papers(db_path, "coasts")]
    years = sorted({p.year for p in papers if p.year})
    first, last = years[1], years[-2]
    env = scrapy_env(simulator, db_path)

    def exported_ids(*facets: str) -> list[int]:
        done = run_scrapy("export-papers", "--task", "coasts", "--format", "csv", *facets, env=env)
        assert done.returncode == 0, done.stderr
        return sorted(read_csv(done.stdout))

    in_years = [p.id for p in papers if p.year and first <= p.year <= last]
    assert exported_ids("--year-from", str(first), "--year-to", str(last)) == in_years
    assert 0 < len(in_years) < len(papers)
    assert exported_ids("--source", "openalex", "--attribution", "both") == [
        p.id for p in papers if "openalex" in p.sources and p.attribution == "both"
    ]
    assert exported_ids("--evidence", "fetch") == [p.id for p in papers if p.evidence == "fetch"]
    (query_id,) = [row["id"] for row in query_db(db_path, "SELECT id FROM queries")]
    assert exported_ids() == sorted(
        read_csv(
            run_scrapy(
                "export-papers", "--query-id", str(query_id), "--format", "csv", env=env
            ).stdout
        )
    )

    refusals = {
        ("--format", "ris"): (2, "name the papers to export: --task TASK"),
        ("--task", "coasts"): (2, "--format is needed"),
        ("--task", "coasts", "-o", str(tmp_path / "x.txt")): (2, "has no suffix that names one"),
        ("--task", "coasts", "--format", "ris", "--year-from", "2020", "--year-to", "2010"): (
            2,
            "year range 2020-2010 is empty",
        ),
        ("--task", "coasts", "--format", "ris", "--source", "altavista"): (
            2,
            "unknown source 'altavista': use the name of an engine",
        ),
        ("--task", "nope", "--format", "ris"): (1, "task 'nope' is not in the store"),
        ("--batch", "9", "--format", "ris"): (1, "batch 9 is not in the store"),
        ("--query-id", "99", "--format", "ris"): (1, "query 99 is not in the store"),
        ("--selection", "99", "--format", "ris"): (1, "selection 99 is not in the store"),
        ("--task", "coasts", "--batch", "1", "--format", "ris"): (2, "not allowed with"),
        ("--task", "coasts", "-o", str(tmp_path / "missing" / "x.ris")): (2, "cannot write"),
    }
    for arguments, (status, message) in refusals.items():
        done = run_scrapy("export-papers", *arguments, env=env)
        assert (done.returncode, done.stdout) == (status, ""), arguments
        assert message in done.stderr, (arguments, done.stderr)
    assert not list(tmp_path.glob("x.txt*"))
