"""Every simulated engine, by name, in its real engine's request and response shapes.

The markup follows the structure of the real pages (our own templates, not copies): the same
elements, ids and classes the parsers rely on, the same paging parameters and token hand-offs.
`landing` is not a search engine: it serves the publishers' pages of the simulated papers.
"""

from __future__ import annotations

from lyra_crawl.simulator.engines.apis import Qwant, Wikidata, Wikipedia
from lyra_crawl.simulator.engines.base import SimEngine, SimPage
from lyra_crawl.simulator.engines.duckduckgo import DuckDuckGoHtml
from lyra_crawl.simulator.engines.landing import Landing
from lyra_crawl.simulator.engines.paper_ids import PaperIndex
from lyra_crawl.simulator.engines.papers import Crossref, OpenAlex, SemanticScholar
from lyra_crawl.simulator.engines.scholarly import Arxiv, PubMed
from lyra_crawl.simulator.engines.startpage import Startpage
from lyra_crawl.simulator.engines.web import Bing, Brave, Ecosia, Google, Marginalia, Mojeek

__all__ = ["ENGINE_NAMES", "SimEngine", "SimPage", "build_engines"]


def build_engines(
    *, google_js: bool = True, papers: PaperIndex | None = None
) -> dict[str, SimEngine]:
    """One fresh instance of every engine; `google_js` makes Google insert results by script;
    the paper APIs and landing pages find papers by id in `papers` (the server fills it)."""
    papers = papers or PaperIndex()
    engines: list[SimEngine] = [
        DuckDuckGoHtml(),
        Google(javascript=google_js),
        Bing(),
        Mojeek(),
        Brave(),
        Ecosia(),
        Startpage(),
        Marginalia(),
        Qwant(),
        Wikipedia(),
        Wikidata(),
        Arxiv(),
        PubMed(),
        SemanticScholar(papers),
        OpenAlex(papers),
        Crossref(),
        Landing(papers),
    ]
    return {engine.name: engine for engine in engines}


# The search engines (the config's engines): `landing` serves publishers' pages, not results.
ENGINE_NAMES = tuple(name for name in build_engines() if name != Landing.name)
