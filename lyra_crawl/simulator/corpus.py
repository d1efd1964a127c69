"""Deterministic search results for the simulator: same query, same pages, every run.

Results are drawn from a seeded sequence per query. Later pages repeat a share of earlier URLs
(`overlap`) and drift off-topic (`drift`: each page past the first loses that share of query
terms in titles and snippets), so novelty and harvest fall with depth as on real engines.

Result number `index` of a query is also a paper: its publisher page (`landing_url`, where a
DOI link leads) depends only on the query and the index, its abstract (`abstract_of`: the
snippet and three sentences more, some 350 characters with `±`, `<` and `°C` in them) also on
whether a page shows it on topic (with `--drift`); the citation graph and the landing pages
show every paper on topic.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from urllib.parse import quote

DOMAINS = (
    "en.wikipedia.org",
    "www.nature.com",
    "journals.plos.org",
    "www.sciencedirect.com",
    "link.springer.com",
    "www.ipcc.ch",
    "www.theguardian.com",
    "www.bbc.co.uk",
    "www.researchgate.net",
    "www.frontiersin.org",
    "www.mdpi.com",
    "www.who.int",
    "www.epa.gov",
    "www.unep.org",
    "academic.oup.com",
    "onlinelibrary.wiley.com",
)
TOPIC_WORDS = (
    "review",
    "framework",
    "assessment",
    "evidence",
    "policy",
    "strategies",
    "outcomes",
    "report",
    "methods",
    "case study",
    "guide",
    "analysis",
)
OFF_TOPIC_WORDS = (
    "recipes",
    "football",
    "holiday",
    "gardening",
    "smartphone",
    "fashion",
    "lottery",
    "celebrity",
    "furniture",
    "cycling",
    "podcast",
    "museum",
)


# What an on-topic paper is about beside the query: without it two papers' titles would differ
# only in their topic word and number, and any two with the same topic word would score as
# near-duplicates in a fuzzy title match, which real papers' titles seldom are.
SUBJECT_QUALIFIERS = (
    "regional",
    "seasonal",
    "long-term",
    "urban",
    "rural",
    "coastal",
    "upland",
    "tropical",
    "temperate",
    "arid",
    "historical",
    "projected",
    "observed",
    "simulated",
    "community",
    "national",
)
SUBJECT_NOUNS = (
    "sediment budgets",
    "storm surges",
    "groundwater",
    "land use",
    "crop yields",
    "heat waves",
    "river discharge",
    "insurance losses",
    "public health",
    "infrastructure",
    "biodiversity",
    "soil moisture",
    "migration",
    "energy demand",
    "water quality",
    "early warning",
    "household income",
    "forest cover",
    "fisheries",
    "governance",
)


SUBJECT_PLACES = (
    "the Baltic",
    "West Africa",
    "the Andes",
    "Southeast Asia",
    "the Great Plains",
    "the Alps",
    "the Nile basin",
    "Central America",
    "the Arctic",
    "Australia",
    "the Balkans",
    "the Indian subcontinent",
)


def subject(query: str, index: int) -> str:
    """What paper `index` of `query` studies, beside the query itself (its own sequence)."""
    rng = random.Random(seed("subject", query, index))
    first, second = rng.sample(SUBJECT_NOUNS, 2)
    place = rng.choice(SUBJECT_PLACES)
    return f"{rng.choice(SUBJECT_QUALIFIERS)} {first} and {second} in {place}"


GIVEN_NAMES = ("Ana", "Bo", "Chidi", "Dana", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun")
FAMILY_NAMES = (
    "Okafor",
    "Lindqvist",
    "Tanaka",
    "Moreau",
    "Novak",
    "Haddad",
    "Silva",
    "Kowalski",
    "Nguyen",
    "Schmidt",
)


@dataclass(frozen=True)
class SimResult:
    """One result of a query; `index` is its place in the query's corpus (0, 1, 2, …).

    `year` and `authors` describe the paper behind it, for the sources that give them.
    """

    url: str
    title: str
    snippet: str
    index: int
    year: int
    authors: tuple[tuple[str, str], ...]
    doi: str | None = None
    # The publisher's page of the paper: `url` itself unless `url` is its DOI link.
    landing_url: str = ""


def seed(*parts: object) -> int:
    """A 64-bit seed that depends only on `parts`."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def _where(rng: random.Random, query: str, index: int) -> tuple[str, str | None]:
    """The first draws of a result's sequence: its domain and its DOI (every fifth has one)."""
    domain = DOMAINS[rng.randrange(len(DOMAINS))]
    if index % 5:
        return domain, None
    return domain, f"10.{5000 + rng.randrange(4000)}/sim.{seed(query, index) % 10**7}"


def doi_of(query: str, index: int) -> str | None:
    """make_result(query, index, …).doi, without drawing the rest of the result."""
    return _where(random.Random(seed("result", query, index)), query, index)[1]


def make_result(query: str, index: int, on_topic: bool) -> SimResult:
    """Result number `index` for `query` (its URL depends only on query and index)."""
    rng = random.Random(seed("result", query, index))
    terms = query.split() or ["search"]
    domain, doi = _where(rng, query, index)
    slug = quote("-".join(t.lower() for t in terms[:4]), safe="-")
    landing_url = f"https://{domain}/{slug}/{index}"
    url = landing_url if doi is None else f"https://doi.org/{doi}"
    topic = TOPIC_WORDS[rng.randrange(len(TOPIC_WORDS))]
    if on_topic:
        title = (
            f"{' '.join(t.capitalize() for t in terms)}: {topic} of {subject(query, index)} {index}"
        )
        snippet = (
            f"An overview of {query} with {topic} and evidence from recent work; "
            f"{terms[0]} findings summarised (result {index})."
        )
    else:
        words = rng.sample(OFF_TOPIC_WORDS, 3)
        title = f"{words[0].capitalize()} and {words[1]}: {topic} {index}"
        snippet = f"Everything about {words[0]}, {words[1]} and {words[2]} (result {index})."
    # A separate sequence, so adding paper fields never changed the URLs and titles above.
    paper = random.Random(seed("paper", query, index))
    authors = tuple(
        (paper.choice(GIVEN_NAMES), paper.choice(FAMILY_NAMES)) for _ in range(paper.randint(1, 4))
    )
    return SimResult(
        url=url,
        title=title,
        snippet=snippet,
        index=index,
        year=2005 + paper.randrange(20),
        authors=authors,
        doi=doi,
        landing_url=landing_url,
    )


STUDY_VERBS = ("analysed", "surveyed", "modelled", "compared", "monitored")
STUDY_UNITS = ("sites", "catchments", "cohorts", "plots", "stations")
PLACES = ("three continents", "the North Sea coast", "the Sahel", "Patagonia", "the Mekong delta")
MEASURES = ("Mean temperature", "Annual yield", "Sediment load", "Species richness", "Runoff")
CHANGE_UNITS = ("°C", "%", "mm per year", "t/ha", "species per plot")
CONCLUSIONS = (
    "call for long-term monitoring before policies are changed",
    "support adaptive management at the regional scale",
    "question the assumptions of earlier global models",
    "show where further field data would help most",
)


def abstract_withheld(result: SimResult) -> bool:
    """Its publisher gives Semantic Scholar, OpenAlex and Crossref no abstract: only its landing
    page may have one."""
    return result.index % 4 == 3


def abstract_of(result: SimResult) -> str:
    """The paper's abstract: its snippet, then what was studied, found and concluded."""
    rng = random.Random(seed("abstract", result.url))
    start = 1990 + rng.randrange(20)
    change, spread = rng.uniform(0.5, 9.5), rng.uniform(0.1, 0.9)
    return (
        f"{result.snippet} We {rng.choice(STUDY_VERBS)} {rng.randrange(12, 400)} "
        f"{rng.choice(STUDY_UNITS)} across {rng.choice(PLACES)} between {start} and "
        f"{start + rng.randrange(5, 25)}. {rng.choice(MEASURES)} changed by {change:.1f} ± "
        f"{spread:.1f} {rng.choice(CHANGE_UNITS)} (p < 0.05), more than the models predicted. "
        f"These results {rng.choice(CONCLUSIONS)}."
    )


@dataclass(frozen=True)
class CorpusShape:
    """How a query's pages evolve with depth.

    Page 1 is all new. Page p >= 2 repeats `overlap + overlap_step * (p - 2)` of its slots from
    URLs earlier pages showed (capped at 1), and keeps `1 - drift * (p - 1)` of its results on
    topic. Once `results_total` new results have been shown, pages are empty.
    """

    results_total: int = 200
    overlap: float = 0.0
    overlap_step: float = 0.0
    drift: float = 0.0

    def overlap_at(self, page_number: int) -> float:
        if page_number < 2:
            return 0.0
        return min(1.0, self.overlap + self.overlap_step * (page_number - 2))

    def on_topic_at(self, page_number: int) -> float:
        return max(0.0, 1.0 - self.drift * (page_number - 1))


def shape_for_query(query: str) -> CorpusShape:
    """A varied but reproducible shape per query, for benchmarks over many queries.

    Ranges follow what deep result pages look like: a little repetition on page 2 that grows
    with depth, and relevance that fades within three to ten pages.
    """
    rng = random.Random(seed("shape", query))
    return CorpusShape(
        results_total=rng.randrange(60, 201, 10),
        overlap=rng.uniform(0.0, 0.3),
        overlap_step=rng.uniform(0.05, 0.25),
        drift=rng.uniform(0.1, 0.4),
    )


def _fresh_before(page_number: int, per_page: int, shape: CorpusShape) -> int:
    """How many distinct results pages 1..page_number-1 showed."""
    shown = 0
    for page in range(1, page_number):
        repeats = round(per_page * shape.overlap_at(page)) if shown else 0
        shown += min(per_page - repeats, max(0, shape.results_total - shown))
    return shown


def page_results(
    query: str, page_number: int, per_page: int, shape: CorpusShape
) -> list[SimResult]:
    """The results of page `page_number` (1-based), empty once the corpus is exhausted."""
    shown = _fresh_before(page_number, per_page, shape)
    if shown >= shape.results_total:
        return []
    rng = random.Random(seed("page", query, page_number))
    repeats = round(per_page * shape.overlap_at(page_number)) if shown else 0
    fresh = min(per_page - repeats, shape.results_total - shown)
    # Repeated slots show URLs an earlier page already showed.
    indexes = rng.sample(range(shown), min(repeats, shown)) + list(range(shown, shown + fresh))
    on_topic_share = shape.on_topic_at(page_number)
    results = [make_result(query, index, rng.random() < on_topic_share) for index in indexes]
    rng.shuffle(results)
    return results
