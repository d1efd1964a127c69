"""The typed config: search_parsers.yaml (HOW to talk to each engine) and engines.yaml (POLICY).

Each class is a frozen dataclass the rest of the code reads, and its annotations are the schema
pydantic validates the YAML against (`ParsersFile`, `PolicyFile`); rules across fields are the
`_…_rules` validators. Fields are declared in the order they have always been checked, so the
first problem reported is the same one as ever. Built in code, the classes validate nothing.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    PlainValidator,
    SkipValidation,
    ValidationInfo,
)

from lyra_crawl.config.errors import not_one_of, problem
from lyra_crawl.config.fields import (
    AtLeastOne,
    Flag,
    Key,
    NotNegative,
    Number,
    Scalars,
    Share,
    Strings,
    Text,
    Whole,
    bounded,
    null_as,
    one_of,
    placeholders,
    templates,
)
from lyra_crawl.config.retrieval import CheckedRetrievalPolicy, RetrievalPolicy
from lyra_crawl.engines.base import BLOCK_OUTCOMES, Outcome
from lyra_crawl.paging.stop_rules import SERP_MAX_PAGES_LIMIT
from lyra_crawl.politeness.hours import HourWindow, parse_window
from lyra_crawl.quoting import show

PARSERS_FILE = "search_parsers.yaml"
POLICY_FILE = "engines.yaml"

FAMILIES = ("html", "json", "atom", "xml")
RENDERS = ("http", "browser")
PAGINATION_TYPES = ("offset", "page")
NEXT_PAGE_MODES = ("formula", "form")
STRATEGIES = ("fixed", "auto", "exhaustive")
TIME_RANGES = ("day", "week", "month", "year")
PARAM_PLACEHOLDERS = frozenset(
    {"query", "offset", "page", "results_per_page", "time_range", "region", "language"}
)
# Placeholders filled from settings, never from the query: placeholder -> the LYRA_* setting.
# A secret left empty drops the parameter or header that uses it.
SECRET_SETTINGS: Mapping[str, str] = {
    "s2_api_key": "LYRA_S2_API_KEY",
    "openalex_api_key": "LYRA_OPENALEX_API_KEY",
    "contact_email": "LYRA_CONTACT_EMAIL",
}
SECRET_PLACEHOLDERS = frozenset(SECRET_SETTINGS)
HOST_PLACEHOLDERS = frozenset({"language"})
REQUIRED_HTML_RULES = ("results", "url", "title")
_ELEMENT_NAME = re.compile(r"[a-z][a-z0-9-]*")
# Parsers for bodies that XPath rules cannot describe (JSON, Atom, E-utilities XML), by name;
# lyra_crawl.engines.parsing maps each name to its module.
PARSER_HOOKS = (
    "qwant",
    "wikipedia",
    "wikidata",
    "arxiv",
    "pubmed",
    "semantic_scholar",
    "openalex",
    "crossref",
)
FOLLOW_UP_PLACEHOLDERS = frozenset({"ids"})
BLOCK_KINDS = tuple(sorted(outcome.value for outcome in BLOCK_OUTCOMES))

# Cool-down seconds by block class; "network" covers timeouts, dropped connections and 5xx.
DEFAULT_COOLDOWNS_S: Mapping[str, float] = {
    Outcome.CAPTCHA.value: 3600.0,
    Outcome.ACCESS_DENIED.value: 3600.0,
    Outcome.JAVASCRIPT_REQUIRED.value: 3600.0,
    Outcome.GEO_BLOCK.value: 3600.0,
    Outcome.RATE_LIMITED.value: 600.0,
    # An engine answering with the same page again is throttling quietly: back off as for 429.
    Outcome.SOFT_BLOCK.value: 600.0,
    "network": 5.0,
}


def _hostname(url: str) -> str | None:
    """The URL's host; None when it has none or cannot be split (an unclosed "[")."""
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _engine_url(url: str) -> str:
    parts = urlsplit(url) if _hostname(url) else None
    if parts is None or parts.scheme not in ("http", "https"):
        raise problem(f"must be an absolute http(s) URL (got {show(url)})")
    if placeholders(parts.netloc) - HOST_PLACEHOLDERS or placeholders(parts.path + parts.query):
        raise problem(
            f"may use only {{language}}, in the host (got {show(url)}): "
            "put query values under params"
        )
    return url


def _element_name(name: str) -> str:
    if not _ELEMENT_NAME.fullmatch(name):
        raise problem(f"must be one HTML element name such as main (got {show(name)})")
    return name


def _time_ranges(values: Mapping[str, str]) -> Mapping[str, str]:
    for key in values:
        if key not in TIME_RANGES:
            raise not_one_of(TIME_RANGES, key, key)
    return values


def _block_node(node: Any) -> Any:
    """A block rule's node, an absent kind read as null (reported as not one of the kinds)."""
    if node is None or isinstance(node, dict):
        return {"kind": None, **(node or {})}
    return node


# A list of markers; anything empty (null, "", 0) is no markers.
Markers = BeforeValidator(lambda values: values or ())


@dataclass(frozen=True)
class BlockRule:
    """Markers that identify a block page; any one of them matching is enough."""

    kind: Annotated[Outcome, one_of(BLOCK_KINDS), AfterValidator(Outcome)]
    status: Annotated[tuple[Whole, ...], Markers] = ()
    body_contains: Annotated[tuple[Text, ...], Markers] = ()
    url_contains: Annotated[tuple[Text, ...], Markers] = ()
    xpath: Annotated[tuple[Text, ...], Markers] = ()


def _block_rules(rule: BlockRule) -> BlockRule:
    if not (rule.status or rule.body_contains or rule.url_contains or rule.xpath):
        raise problem("has no marker: give status, body_contains, url_contains or xpath")
    return rule


CheckedBlockRule = Annotated[BlockRule, BeforeValidator(_block_node), AfterValidator(_block_rules)]


@dataclass(frozen=True)
class Layout:
    """One layout of an HTML engine's result page: each role's XPath alternatives, in order."""

    layout: Text = "current"
    results: Strings = ()
    url: Strings = ()
    title: Strings = ()
    snippet: Strings = ()
    date: Strings = ()
    # The pager's current page number (a mismatch with the page asked for is a soft block).
    current_page: Strings = ()
    # The element the results sit in, each in a block of its own one level below it (the real
    # pages' guard checks every result against it); the first alternative found is the one.
    container: Strings = ()
    # Heads of the modules inside the container (a module's heading, a question's toggle):
    # everything after a head, beside it in its parent, is the module's and never a result.
    modules: Strings = ()


def _layouts(node: Any) -> Any:
    """`parse` as a list of layouts: one mapping is the one (current) layout."""
    if node is None:
        return ()
    return [node] if isinstance(node, dict) else node


@dataclass(frozen=True)
class NoResultsMarkers:
    """Markers of the engine's own "nothing matched your search" page; any one is enough."""

    body_contains: Annotated[tuple[Text, ...], Markers] = ()
    xpath: Annotated[tuple[Text, ...], Markers] = ()


@dataclass(frozen=True)
class FollowUp:
    """A second request that completes a page (PubMed: esummary for the ids esearch found)."""

    url: Text
    params: Annotated[Scalars, templates(FOLLOW_UP_PLACEHOLDERS)] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """How to talk to one engine (search_parsers.yaml)."""

    name: str
    url: Annotated[Text, AfterValidator(_engine_url)]
    params: Annotated[Scalars, templates(PARAM_PLACEHOLDERS | SECRET_PLACEHOLDERS)] = field(
        default_factory=dict
    )
    # Request headers; values may use only secret placeholders ({s2_api_key}, …).
    headers: Annotated[Scalars, templates(SECRET_PLACEHOLDERS)] = field(default_factory=dict)
    # Send lyra's own User-Agent (engines.request.identifying_user_agent) instead of a
    # browser's: for APIs whose policy asks tools to say who they are and how to reach them.
    identify: Flag = False
    pagination_type: Annotated[str, one_of(PAGINATION_TYPES)]
    results_per_page: AtLeastOne
    max_pages: AtLeastOne
    # The deepest result the engine serves by offset or page (offset + limit <= it), if capped.
    max_results_window: AtLeastOne | None = None
    offset_base: Whole = 0
    first_page_omits: Strings = ()
    time_range: Annotated[Scalars, AfterValidator(_time_ranges)] = field(default_factory=dict)
    region: Scalars = field(default_factory=dict)
    default_region: Text | None = None
    family: Annotated[str, one_of(FAMILIES)]
    # HTML engines: the page's layouts, current first, older after; the first whose `results`
    # finds anything is read.
    parse: Annotated[tuple[Layout, ...], BeforeValidator(_layouts)] = ()
    # HTML engines: the element every result and the pager sit in (e.g. main). A page is read
    # from that element's bytes alone when they hold results (parsing a third of a large page),
    # else from the whole page, so blocks and layout changes are judged as without it.
    results_within: Annotated[Text, AfterValidator(_element_name)] | None = None
    # HTML engines: how the engine says nothing matched (else a page without results is
    # layout_changed).
    no_results: NoResultsMarkers | None = None
    implemented: Flag = True
    # Which values are right depends on the family: checked in _engine_rules.
    parser: Annotated[str | None, SkipValidation] = None
    next_page: Annotated[str, one_of(NEXT_PAGE_MODES)] = "formula"
    next_page_form: Text | None = None
    token_page: Text | None = None
    token_fields: Strings = ()
    render: Annotated[str, one_of(RENDERS)] = "http"
    method: Annotated[str, one_of(("GET", "POST"))] = "GET"
    pagination_param: Text
    page_base: Whole = 1
    follow_up: FollowUp | None = None
    max_query_length: Whole = 2000
    blocks: Annotated[tuple[CheckedBlockRule, ...], null_as(())] = ()
    # A scholarly source (paper records, not web pages): one of a crawl's unified sources.
    scholarly: Flag = False

    @property
    def host(self) -> str:
        """The configured host, with any {language} placeholder left in place."""
        return urlsplit(self.url).hostname or ""


def _engine_rules(spec: EngineSpec) -> EngineSpec:
    deepest = spec.offset_base + spec.max_pages * spec.results_per_page
    window = spec.max_results_window
    if window is not None and deepest > window:
        raise problem(
            f"{spec.max_pages} with results_per_page {spec.results_per_page} reaches result "
            f"{deepest}, past max_results_window {window} (the engine serves nothing deeper): "
            "lower max_pages or results_per_page",
            "max_pages",
        )
    for param in spec.first_page_omits:
        if param not in spec.params:
            raise problem(
                f"names '{param}', which is not in params: remove it or add the parameter",
                "first_page_omits",
            )
    if spec.default_region is not None and spec.default_region not in spec.region:
        raise problem(
            f"is {show(spec.default_region)}, which is not a key of region", "default_region"
        )
    if spec.implemented and spec.family == "html":
        if not spec.parse:
            raise problem("is missing: add the XPath rules of the engine's result page", "parse")
        for index, layout in enumerate(spec.parse):
            at = ("parse",) if len(spec.parse) == 1 else ("parse", index)
            for rule in REQUIRED_HTML_RULES:
                if not getattr(layout, rule):
                    raise problem("is missing: add an XPath", *at, rule)
            if layout.modules and not layout.container:
                raise problem(
                    "are looked for in the results container: add its XPath as container",
                    *at,
                    "modules",
                )
        markers = spec.no_results
        if markers is None or not (markers.body_contains or markers.xpath):
            raise problem(
                "is missing: give the body_contains text or xpath of the engine's own "
                "'no results' page (else a page without results is layout_changed)",
                "no_results",
            )
    if spec.family != "html" and spec.results_within is not None:
        raise problem(
            "is set, but only html engines are read from an element: remove it", "results_within"
        )
    if spec.family == "html" and spec.parser is not None:
        raise problem(
            "is set, but html engines are parsed by their XPath rules: remove it", "parser"
        )
    if spec.family != "html" and spec.parser not in PARSER_HOOKS:
        raise not_one_of(PARSER_HOOKS, spec.parser, "parser")
    if spec.next_page == "form" and not spec.next_page_form:
        raise problem(
            "is missing: next_page form needs the XPath of the next-page form", "next_page_form"
        )
    host = _hostname(spec.url)
    if spec.token_page is not None and _hostname(spec.token_page) != host:
        raise problem(
            f"must be on the engine's host {host} (got {show(spec.token_page)})", "token_page"
        )
    if bool(spec.token_page) != bool(spec.token_fields):
        raise problem("and token_fields go together: give both or neither", "token_page")
    if spec.follow_up is not None and _hostname(spec.follow_up.url) != host:
        raise problem(
            f"must be on the engine's host {host} (got {show(spec.follow_up.url)})",
            "follow_up",
            "url",
        )
    return spec


def _named(nodes: Any) -> Any:
    """Each engine's node with its name, which the YAML gives as the node's key."""
    if not isinstance(nodes, dict):
        return {} if nodes is None else nodes
    return {
        key: {**(node or {}), "name": str(key)} if node is None or isinstance(node, dict) else node
        for key, node in nodes.items()
    }


@dataclass(frozen=True)
class ParsersFile:
    """search_parsers.yaml."""

    engines: Annotated[
        dict[Key, Annotated[EngineSpec, AfterValidator(_engine_rules)]], BeforeValidator(_named)
    ]


def _window(text: Any) -> HourWindow:
    try:
        return parse_window(text)
    except ValueError as exc:
        raise problem(f": {exc}") from None


@dataclass(frozen=True, kw_only=True)
class EnginePolicy:
    """What the project is allowed to do with one engine (engines.yaml)."""

    name: str
    qps: Annotated[Number, bounded(lambda x: x > 0, "must be > 0")]
    weight: NotNegative = 1.0
    daily_limit: (
        Annotated[Whole, bounded(lambda n: n >= 0, "must be >= 0, or null for no limit")] | None
    ) = None
    enabled: Flag = True
    lastmile: Flag = False
    pagination_enabled: Flag = True
    # UTC windows in which requests may go out; empty = any hour.
    allowed_hours: Annotated[
        tuple[Annotated[HourWindow, PlainValidator(_window)], ...], null_as(())
    ] = ()


@dataclass(frozen=True)
class PaginationDefaults:
    serp_max_pages: Annotated[
        Whole,
        bounded(lambda n: 1 <= n <= SERP_MAX_PAGES_LIMIT, f"must be 1..{SERP_MAX_PAGES_LIMIT}"),
    ] = SERP_MAX_PAGES_LIMIT
    min_novelty_rate: Share = 0.1
    min_harvest_rate: Share = 0.05
    strategy: Annotated[str, one_of(STRATEGIES)] = "auto"
    relevance_threshold: Share = 0.2


@dataclass(frozen=True)
class BreakerPolicy:
    """When an engine's circuit breaker opens and for how long (engines.yaml `breaker:`)."""

    failure_threshold: AtLeastOne = 3
    # From the YAML: the kinds it names over the defaults.
    cooldown_s: Annotated[
        dict[
            Annotated[str, one_of(tuple(DEFAULT_COOLDOWNS_S))],
            Annotated[Number, bounded(lambda s: s > 0, "must be > 0 seconds")],
        ],
        null_as({}),
        AfterValidator(lambda given: {**DEFAULT_COOLDOWNS_S, **given}),
    ] = field(default_factory=lambda: dict(DEFAULT_COOLDOWNS_S))
    max_cooldown_s: Number = 86400.0


def _breaker_rules(breaker: BreakerPolicy) -> BreakerPolicy:
    largest = max(breaker.cooldown_s.values())
    if breaker.max_cooldown_s < largest:
        raise problem(
            f"({breaker.max_cooldown_s:g}) must be >= every cool-down (largest {largest:g})",
            "max_cooldown_s",
        )
    return breaker


def _engine_names(names: Any) -> tuple[str, ...]:
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise problem(f"must be a list of engine names (got {show(names)})")
    return tuple(names)


@dataclass(frozen=True)
class LastMilePolicy:
    """When and in which order last-mile engines are tried (engines.yaml `lastmile:`)."""

    threshold: Share = 0.9
    order: Annotated[tuple[str, ...], PlainValidator(_engine_names)] = ("brave", "google", "bing")
    # At most this share of a task's queries may go last-mile.
    max_share: Share = 0.1


# -a citation_depth: 0 (no citation graph) .. 2 (the references and citations of those too).
CITATION_DEPTHS = (0, 2)


@dataclass(frozen=True)
class CitationPolicy:
    """How far a query's citation graph goes (engines.yaml `citations:`)."""

    # The defaults of -a citation_depth and -a citation_top_k: the graph of the top_k papers
    # with an abstract, by fused rank, `depth` steps out (lyra_crawl.papers.citation_crawl).
    depth: Annotated[
        Whole,
        bounded(
            lambda n: CITATION_DEPTHS[0] <= n <= CITATION_DEPTHS[1],
            f"must be {CITATION_DEPTHS[0]}..{CITATION_DEPTHS[1]}",
        ),
    ] = 0
    top_k: AtLeastOne = 10
    # At most this many of one paper's references (or citations) are read from each API: a
    # classic cited 50,000 times would otherwise cost hundreds of requests.
    max_per_list: AtLeastOne = 1000


@dataclass(frozen=True)
class PapersPolicy:
    """How canonical papers are read (engines.yaml `papers:`)."""

    # A paper whose abstract has at least this many characters is read from it; any other is
    # fetched (lyra_crawl.papers.evidence).
    min_abstract_chars: AtLeastOne = 200


@dataclass(frozen=True)
class _Cache:
    ttl_hours: NotNegative = 24.0


def _described(name: str, info: ValidationInfo) -> str:
    """An engines.yaml name that search_parsers.yaml describes (context["engines"])."""
    engines = info.context["engines"]
    if name not in engines:
        raise problem(
            f"is not described in {PARSERS_FILE}: fix the name or add it there "
            f"(known: {', '.join(sorted(engines))})"
        )
    return name


@dataclass(frozen=True)
class PolicyFile:
    """engines.yaml; validated with context={"engines": the engines search_parsers.yaml has}."""

    engines: Annotated[
        dict[Annotated[Key, AfterValidator(_described)], EnginePolicy], BeforeValidator(_named)
    ]
    pagination: Annotated[PaginationDefaults, null_as({})] = field(
        default_factory=PaginationDefaults
    )
    cache: Annotated[_Cache, null_as({})] = field(default_factory=_Cache)
    breaker: Annotated[BreakerPolicy, null_as({}), AfterValidator(_breaker_rules)] = field(
        default_factory=BreakerPolicy
    )
    lastmile: Annotated[LastMilePolicy, null_as({})] = field(default_factory=LastMilePolicy)
    papers: Annotated[PapersPolicy, null_as({})] = field(default_factory=PapersPolicy)
    citations: Annotated[CitationPolicy, null_as({})] = field(default_factory=CitationPolicy)
    retrieval: CheckedRetrievalPolicy = field(default_factory=RetrievalPolicy)


def _lastmile_rules(policy: PolicyFile) -> PolicyFile:
    order = policy.lastmile.order
    for name in order:
        if name not in policy.engines or not policy.engines[name].lastmile:
            raise problem(
                f"names '{name}', which is not an engine with lastmile: true: fix the name or "
                "set lastmile: true on it",
                "lastmile",
                "order",
            )
    for name, engine in policy.engines.items():
        if engine.lastmile and name not in order:
            raise problem(
                "has lastmile: true but is missing from lastmile.order: add it there",
                "engines",
                name,
            )
    return policy


CheckedPolicyFile = Annotated[PolicyFile, AfterValidator(_lastmile_rules)]


@dataclass(frozen=True)
class LyraConfig:
    engines: Mapping[str, EngineSpec]
    policies: Mapping[str, EnginePolicy]
    pagination: PaginationDefaults = field(default_factory=PaginationDefaults)
    cache_ttl_hours: float = 24.0
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    lastmile: LastMilePolicy = field(default_factory=LastMilePolicy)
    papers: PapersPolicy = field(default_factory=PapersPolicy)
    citations: CitationPolicy = field(default_factory=CitationPolicy)
    retrieval: RetrievalPolicy = field(default_factory=RetrievalPolicy)
    source: str = ""

    def engine(self, name: str) -> EngineSpec:
        return self.engines[name]

    def policy(self, name: str) -> EnginePolicy:
        return self.policies[name]
