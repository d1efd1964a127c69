"""Every simulated engine, by name, in its real engine's request and response shapes.

The markup follows the structure of the real pages (our own templates, not copies): the same
elements, ids and classes the parsers rely on, the same paging parameters and token hand-offs.
"""

from __future__ import annotations

from lyra_crawl.simulator.engines.apis import Qwant, Wikidata, Wikipedia
from lyra_crawl.simulator.engines.base import SimEngine, SimPage
from lyra_crawl.simulator.engines.duckduckgo import DuckDuckGoHtml
from lyra_crawl.simulator.engines.papers import Crossref, OpenAlex, SemanticScholar
from lyra_crawl.simulator.engines.scholarly import Arxiv, PubMed
from lyra_crawl.simulator.engines.startpage import Startpage
from lyra_crawl.simulator.engines.web import Bing, Brave, Ecosia, Google, Marginalia, Mojeek

__all__ = ["ENGINE_NAMES", "SimEngine", "SimPage", "build_engines"]


def build_engines(*, google_js: bool = True) -> dict[str, SimEngine]:
    """One fresh instance of every engine; `google_js` makes Google insert results by script."""
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
        SemanticScholar(),
        OpenAlex(),
        Crossref(),
    ]
    return {engine.name: engine for engine in engines}


ENGINE_NAMES = tuple(build_engines())
