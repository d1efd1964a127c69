"""Publishers' landing pages of the simulated papers, at `<simulator>/landing/<page's path>`.

Route a paper's URL with `route_to_simulator(url, "landing", simulator_url)`: the publisher page
`https://www.nature.com/coastal-flooding/17` is `/landing/coastal-flooding/17`, and the DOI
link `https://doi.org/10.6680/sim.740647` is `/landing/10.6680/sim.740647`, which redirects
(302) to its paper's publisher page as doi.org does (a preprint's DOI too). Pages are found
through PaperIndex: papers of the queries the simulator was asked (their graph's papers
included); any other path is a 404 page.

A paper's page gives its abstract (corpus.abstract_of) the way one kind of publisher does, the
kind `LANDING_KINDS[(number // 4) % 9]`, so the papers whose abstract the APIs withhold
(number % 4 == 3: 3, 7, 11, …) meet every kind in turn:
- `highwire`: `citation_title`, `citation_author` (one each), `citation_publication_date`,
  `citation_doi`, `citation_journal_title` and `citation_abstract` meta tags;
- `dublin_core`: `DC.title`, `DC.creator` (one each), `DC.date`, `DC.identifier`,
  `DC.description`;
- `open_graph`: `og:title`, `og:type` (article), `og:url`, `og:description`;
- `json_ld`: a `<script type="application/ld+json">` schema.org ScholarlyArticle with
  `headline`, `author`, `datePublished` and `abstract`;
- `combined`: the citation_* tags without `citation_abstract`, then `og:description`,
  `dc.description` and the JSON-LD `abstract`, all the same text;
- `none`: the citation_* tags and no abstract anywhere; its `<meta name="description">` is the
  publisher's blurb, not the abstract;
- `forbidden`: HTTP 403, an "Access denied" page (a publisher's bot wall);
- `body`: the abstract in the body only, as ScienceDirect shows it: a Highlights block before
  the abstract section (`div.abstract.author`, headed "Abstract"), a Graphical abstract and the
  Keywords after it; its `og:description` is the abstract cut with an ellipsis, and the
  citation_* tags carry no abstract;
- `microdata`: the abstract in the body marked `itemprop="description"` inside the page's
  `itemscope itemtype="http://schema.org/ScholarlyArticle"`, as IOPscience does; no abstract
  meta tag.
The open-access PDFs the paper APIs name (`https://repository.sim/pdf/<hash>.pdf`,
papers.open_access_pdf) are `/landing/pdf/<hash>.pdf`: a PDF (application/pdf), not a page.
Pages of the first five kinds also show the abstract in the page body. Attribute values are
HTML-escaped (the abstracts hold `<`, `±` and `°C`). These pages answer before any fault or
latency.
"""

from __future__ import annotations

import json
import re
from html import escape
from urllib.parse import urlsplit

from lyra_crawl.simulator.citations import PaperKey
from lyra_crawl.simulator.corpus import SimResult, abstract_of
from lyra_crawl.simulator.engines.base import SimEngine, SimPage, html_page, redirect
from lyra_crawl.simulator.engines.paper_ids import PaperIndex, graph_result
from lyra_crawl.simulator.engines.papers import venue
from lyra_crawl.simulator.engines.scholarly import author_names

LANDING_KINDS = (
    "highwire",
    "dublin_core",
    "open_graph",
    "json_ld",
    "combined",
    "none",
    "forbidden",
    "body",
    "microdata",
)
# The publishers' robots.txt, at the simulator's root (every simulated host is that one host):
# each query's paper 19 (a `combined` page, whose abstract the APIs withhold) is off limits.
PUBLISHERS_ROBOTS_TXT = "User-agent: *\nDisallow: /landing/*/19$\n"
OPEN_ACCESS_PDF = re.compile(r"/pdf/[0-9a-f]{12}\.pdf")
PDF_BODY = "%PDF-1.4\n% a simulated open-access PDF\n%%EOF\n"
PUBLISHER_BLURB = "Peer-reviewed journals, books and data from Sim Publishing since 1901."
# How much of the abstract a `body` page's og:description gives before its ellipsis.
PREVIEW_CHARS = 150


def landing_kind(key: PaperKey) -> str:
    """How the paper's landing page gives its abstract (see the module docstring)."""
    return LANDING_KINDS[(key.number // 4) % len(LANDING_KINDS)]


class Landing(SimEngine):
    """Every publisher's pages, and doi.org's redirects to them."""

    name = "landing"

    def __init__(self, papers: PaperIndex) -> None:
        self.papers = papers

    def other_page(self, path: str, params: dict[str, str]) -> SimPage | None:
        if OPEN_ACCESS_PDF.fullmatch(path):
            return SimPage(200, PDF_BODY, "application/pdf")
        found = self.papers.find("landing", path)
        if found is not None:
            return landing_page(found.key)
        found = self.papers.find("doi", path.lstrip("/"))
        if found is not None:
            return redirect(urlsplit(graph_result(found.key).landing_url).path)
        return html_page("Page not found", "<h1>Page not found</h1>", status=404)

    def page_number(self, params: dict[str, str]) -> int | None:
        return None  # every path is answered by other_page


def landing_page(key: PaperKey) -> SimPage:
    result = graph_result(key)
    kind = landing_kind(key)
    if kind == "forbidden":
        return html_page("Access denied", "<h1>Access denied</h1><p>Request blocked.</p>", 403)
    abstract = abstract_of(result)
    head = _head(kind, result, abstract)
    article, headline = (
        (
            '<article itemscope itemtype="http://schema.org/ScholarlyArticle">',
            ' itemprop="headline"',
        )
        if kind == "microdata"
        else ("<article>", "")
    )
    body = (
        f"{article}<h1{headline}>{escape(result.title)}</h1>"
        f'<p class="authors">{escape(", ".join(author_names(result)))}</p>'
        f"{_shown_abstract(kind, abstract)}"
        '<p class="access">Access through your institution</p></article>'
    )
    return SimPage(
        200,
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(result.title)} | {escape(venue(result))}</title>{head}</head>"
        f"<body>{body}</body></html>",
    )


def _shown_abstract(kind: str, abstract: str) -> str:
    """The abstract in the page body, where and how publishers of `kind` show it."""
    text = escape(abstract)
    match kind:
        case "none":
            return ""
        case "body":
            return (
                '<div class="Abstracts" id="abstracts">'
                '<div class="abstract author-highlights"><h2>Highlights</h2><ul>'
                "<li>Highlights are not the abstract.</li>"
                "<li>They come before it on the page.</li></ul></div>"
                f'<div class="abstract author"><h2>Abstract</h2><div><p>{text}</p></div></div>'
                '<div class="abstract graphical"><h2>Graphical abstract</h2>'
                '<figure><img src="/ga.jpg" alt="Graphical abstract"></figure></div></div>'
                '<div class="keywords"><h2>Keywords</h2><span>peat</span></div>'
            )
        case "microdata":
            return (
                '<h2 id="artAbst">Abstract</h2>'
                f'<div class="article-text" itemprop="description"><p>{text}</p></div>'
            )
    return f'<section class="abstract"><h2>Abstract</h2><p>{text}</p></section>'


def _head(kind: str, result: SimResult, abstract: str) -> str:
    """The page's metadata: the abstract where and how publishers of `kind` put it."""
    match kind:
        case "highwire":
            return _highwire(result, abstract)
        case "dublin_core":
            return _dublin_core(result, abstract)
        case "open_graph":
            return _open_graph(result, abstract)
        case "json_ld":
            return _json_ld(result, abstract)
        case "combined":
            return (
                _highwire(result, None)
                + _meta("property", "og:description", abstract)
                + _meta("name", "dc.description", abstract)
                + _json_ld(result, abstract)
            )
        case "body":
            preview = f"{abstract[:PREVIEW_CHARS].rstrip()}…"
            return _highwire(result, None) + _meta("property", "og:description", preview)
        case "microdata":
            return _highwire(result, None)
    return _highwire(result, None) + _meta("name", "description", PUBLISHER_BLURB)


def _meta(attribute: str, name: str, content: str) -> str:
    return f'<meta {attribute}="{escape(name)}" content="{escape(content)}">'


def _highwire(result: SimResult, abstract: str | None) -> str:
    tags = [_meta("name", "citation_title", result.title)]
    tags += [
        _meta("name", "citation_author", f"{family}, {given}") for given, family in result.authors
    ]
    tags.append(_meta("name", "citation_publication_date", f"{result.year}/03/01"))
    tags.append(_meta("name", "citation_journal_title", venue(result)))
    if result.doi:
        tags.append(_meta("name", "citation_doi", result.doi))
    if abstract is not None:
        tags.append(_meta("name", "citation_abstract", abstract))
    return "".join(tags)


def _dublin_core(result: SimResult, abstract: str) -> str:
    tags = [_meta("name", "DC.title", result.title)]
    tags += [_meta("name", "DC.creator", name) for name in author_names(result)]
    tags.append(_meta("name", "DC.date", str(result.year)))
    tags.append(
        _meta("name", "DC.identifier", f"doi:{result.doi}" if result.doi else result.landing_url)
    )
    tags.append(_meta("name", "DC.description", abstract))
    return "".join(tags)


def _open_graph(result: SimResult, abstract: str) -> str:
    return (
        _meta("property", "og:title", result.title)
        + _meta("property", "og:type", "article")
        + _meta("property", "og:url", result.landing_url)
        + _meta("property", "og:description", abstract)
    )


def _json_ld(result: SimResult, abstract: str) -> str:
    article = {
        "@context": "https://schema.org",
        "@type": "ScholarlyArticle",
        "headline": result.title,
        "author": [{"@type": "Person", "name": name} for name in author_names(result)],
        "datePublished": f"{result.year}-03-01",
        "abstract": abstract,
    }
    if result.doi:
        article["identifier"] = f"https://doi.org/{result.doi}"
    # "</" would end the script element early; JSON allows "<\/" for it.
    text = json.dumps(article, ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/ld+json">{text}</script>'
