"""Spider arguments: parse and validate `-a name=value` pairs into a typed object. Pure.

Called by SerpSpider and, before the crawl starts, by the `crawl` command, so a bad argument
ends the run with one clear message and no request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lyra_crawl.config import CITATION_DEPTHS, STRATEGIES, TIME_RANGES, LyraConfig
from lyra_crawl.engines.request import QueryError, check_query_options
from lyra_crawl.paging.stop_rules import SERP_MAX_PAGES_LIMIT
from lyra_crawl.politeness.selection import normal_engines
from lyra_crawl.quoting import show

SERP_MAX_PAGES_RANGE = (1, SERP_MAX_PAGES_LIMIT)
CACHE_MODES = ("use", "refresh", "off")
SERP_SOURCE = "serp"
DEFAULT_SOURCES = (SERP_SOURCE, "semantic_scholar", "openalex")
NOVELTY_SCOPES = ("query", "history")
# Arguments Scrapyd adds to every job; accepted and ignored apart from the job id.
SCRAPYD_ARGUMENTS = frozenset({"_job", "_version", "setting"})
KNOWN_ARGUMENTS = frozenset(
    {
        "query",
        "engine",
        "serp_page",
        "serp_max_pages",
        "strategy",
        "time_range",
        "region",
        "task_id",
        "sources",
        "cache",
        "novelty_scope",
        "harvest_rate",
        "resume",
        "citation_depth",
        "citation_top_k",
    }
)


# Arguments of a crawl that runs a stored batch (`scrapy batch FILE` records it).
BATCH_ARGUMENTS = frozenset({"batch", "concurrency"})


class ArgumentError(ValueError):
    """A spider argument is wrong; the message names it, the value and the fix."""


@dataclass(frozen=True)
class CrawlArguments:
    query: str
    engine: str | None
    serp_page: int
    serp_max_pages: int
    strategy: str
    time_range: str | None
    region: str | None
    task_id: str | None
    job_id: str | None
    cache: str = "use"
    sources: tuple[str, ...] = DEFAULT_SOURCES
    novelty_scope: str = "query"
    harvest_rate: float | None = None
    resume: bool = False
    # The citation graph: how many steps out, from how many papers per step (engines.yaml
    # `citations:` gives the defaults).
    citation_depth: int = 0
    citation_top_k: int = 1
    # Default sources left out because they cannot take this query (a time range, a long
    # query), each with why; sources a user names are never left out: they refuse instead.
    sources_left_out: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SingleQuery:
    """`-a query=…`: a crawl of one query."""

    arguments: CrawlArguments


@dataclass(frozen=True)
class StoredBatch:
    """`-a batch=ID`: a crawl of a stored batch's entries, `concurrency` queries at a time."""

    batch_id: int
    concurrency: int
    job_id: str | None = None


LaunchPlan = SingleQuery | StoredBatch


def parse_launch(raw: Mapping[str, Any], config: LyraConfig) -> LaunchPlan:
    """What a crawl runs: one query, or the entries of a stored batch."""
    if "batch" not in raw:
        if "concurrency" in raw:
            raise ArgumentError(
                "concurrency goes with a stored batch: -a batch=ID -a concurrency=N"
            )
        return SingleQuery(parse_crawl_arguments(raw, config))
    beside = sorted(set(raw) - BATCH_ARGUMENTS - SCRAPYD_ARGUMENTS)
    if beside:
        raise ArgumentError(
            f"spider argument '{beside[0]}' cannot go with -a batch=: a batch's entries carry "
            "their own arguments (put it in the batch file's defaults)"
        )
    return StoredBatch(
        batch_id=_whole_number(raw["batch"], "batch", 1, None),
        concurrency=_whole_number(
            raw.get("concurrency", default_concurrency(config)), "concurrency", 1, None
        ),
        job_id=raw.get("_job") or None,
    )


def default_concurrency(config: LyraConfig) -> int:
    """Queries a batch runs at once unless told: two per engine the frontier may choose.

    Each engine answers one request at a time and a query asks for its next page only after
    the last one is parsed, so a second query per engine keeps it busy in the meantime.
    """
    choosable = [n for n in usable_engines(config) if config.policies[n].weight > 0]
    return max(2 * len(choosable), 2)


def _whole_number(raw: Any, name: str, low: int, high: int | None) -> int:
    text = str(raw).strip()
    try:
        value = int(text)
    except ValueError:
        value = None
    span = f"from {low} to {high}" if high is not None else f">= {low}"
    if value is None or value < low or (high is not None and value > high):
        raise ArgumentError(f"{name} must be a whole number {span} (got {show(raw)}): -a {name}=N")
    return value


def usable_engines(config: LyraConfig) -> list[str]:
    """Engines that can be crawled now: implemented and enabled."""
    return sorted(
        name
        for name, spec in config.engines.items()
        if spec.implemented and name in config.policies and config.policies[name].enabled
    )


def check_engine(config: LyraConfig, engine: str) -> None:
    usable = ", ".join(usable_engines(config))
    if engine not in config.engines:
        raise ArgumentError(f"engine {show(engine)} is unknown: use one of {usable}")
    if not config.engines[engine].implemented:
        raise ArgumentError(f"engine '{engine}' is not implemented yet: use one of {usable}")
    policy = config.policies.get(engine)
    if policy is None or not policy.enabled:
        raise ArgumentError(
            f"engine '{engine}' is disabled in engines.yaml: enable it there or use one of {usable}"
        )


def query_misfit(config: LyraConfig, engine: str, arguments: CrawlArguments) -> str | None:
    """Why `engine` cannot take the query `arguments` describe (its length, region, time range,
    first page), in words that name the fix; None when it can."""
    try:
        check_query_options(
            config.engines[engine],
            arguments.query,
            region=arguments.region,
            time_range=arguments.time_range,
            first_page=arguments.serp_page,
        )
    except QueryError as exc:
        return str(exc)
    return None


def query_misfits(
    config: LyraConfig, engines: Iterable[str], arguments: CrawlArguments
) -> dict[str, str]:
    """Those of `engines` that cannot take the query, each with why (query_misfit)."""
    found = ((engine, query_misfit(config, engine, arguments)) for engine in engines)
    return {engine: why for engine, why in found if why is not None}


def check_engines_take(config: LyraConfig, arguments: CrawlArguments) -> None:
    """ArgumentError unless every engine the query goes to can take it, whoever picks it: the
    SERP engine it names, else at least one the frontier may give it (politeness.selection,
    outside last-mile), and each scholarly source. The crawl (session.opening) asks again of
    the engines it ends up with, and the frontier chooses only among those that take it."""
    if arguments.engine is not None:
        why = query_misfit(config, arguments.engine, arguments)
        if why is not None:
            raise ArgumentError(why)
    elif SERP_SOURCE in arguments.sources:
        _check_frontier_takes(config, arguments)
    for source in arguments.sources:
        if source in (SERP_SOURCE, arguments.engine):
            continue
        why = query_misfit(config, source, arguments)
        if why is not None:
            raise ArgumentError(f"{why}, or leave {source} out of sources")


def _check_frontier_takes(config: LyraConfig, arguments: CrawlArguments) -> None:
    usable = usable_engines(config)
    frontier = normal_engines(config, usable)
    misfits = query_misfits(config, frontier, arguments)
    if not frontier or len(misfits) < len(frontier):
        return
    # The one that takes the longest query says what to change.
    nearest = max(frontier, key=lambda name: config.engines[name].max_query_length)
    serp_engines = [name for name in usable if not config.engines[name].scholarly]
    takers = [name for name in serp_engines if not query_misfit(config, name, arguments)]
    roomiest = max(takers, key=lambda name: config.engines[name].max_query_length, default=None)
    named = f", or name an engine that takes it (engine: {roomiest})" if roomiest else ""
    raise ArgumentError(
        f"no engine the frontier may choose takes this query: {misfits[nearest]}{named}"
    )


def parse_crawl_arguments(raw: Mapping[str, Any], config: LyraConfig) -> CrawlArguments:
    unknown = sorted(set(raw) - KNOWN_ARGUMENTS - SCRAPYD_ARGUMENTS)
    if unknown:
        raise ArgumentError(
            f"unknown spider argument {show(unknown[0])}: "
            f"use one of {', '.join(sorted(KNOWN_ARGUMENTS | BATCH_ARGUMENTS))}"
        )
    for name, value in raw.items():
        if isinstance(value, str) and not _utf8(value):
            raise ArgumentError(f"{name} is not UTF-8 text (got {show(value)}): fix its encoding")
    query = raw.get("query")
    if query is None or not str(query).strip():
        raise ArgumentError('query is required and must not be blank: -a query="your search"')
    query = str(query)
    strategy = _one_of(raw.get("strategy") or config.pagination.strategy, STRATEGIES, "strategy")
    serp_page = _whole_number(raw.get("serp_page", 1), "serp_page", 1, None)
    serp_max_pages = _whole_number(
        raw.get("serp_max_pages", config.pagination.serp_max_pages),
        "serp_max_pages",
        *SERP_MAX_PAGES_RANGE,
    )
    time_range = raw.get("time_range") or None
    if time_range is not None:
        _one_of(time_range, TIME_RANGES, "time_range")
    region = raw.get("region") or None
    cache = _one_of(raw.get("cache") or "use", CACHE_MODES, "cache")
    novelty_scope = _one_of(raw.get("novelty_scope") or "query", NOVELTY_SCOPES, "novelty_scope")
    sources = parse_sources(raw.get("sources"), config)
    engine = raw.get("engine") or None
    if engine is not None:
        check_engine(config, engine)
        if SERP_SOURCE not in sources and engine not in sources:
            raise ArgumentError(
                f"engine '{engine}' is given but sources ({','.join(sources)}) has no serp: "
                f"add serp to sources or leave engine out"
            )
    elif not usable_engines(config):
        raise ArgumentError("no engine is enabled in engines.yaml: enable one or pass -a engine=")
    harvest_rate = raw.get("harvest_rate")
    if harvest_rate is not None:
        try:
            harvest_rate = float(harvest_rate)
        except ValueError:
            harvest_rate = None
        if harvest_rate is None or not 0.0 <= harvest_rate <= 1.0:
            raise ArgumentError(
                f"harvest_rate must be a number from 0 to 1 (got {show(raw['harvest_rate'])}): "
                "-a harvest_rate=0.95"
            )
    resume = _one_of(str(raw.get("resume") or "false").lower(), ("true", "false"), "resume")
    citations = config.citations
    citation_depth = _whole_number(
        raw.get("citation_depth", citations.depth), "citation_depth", *CITATION_DEPTHS
    )
    citation_top_k = _whole_number(
        raw.get("citation_top_k", citations.top_k), "citation_top_k", 1, None
    )
    arguments = CrawlArguments(
        query=query,
        engine=engine,
        serp_page=serp_page,
        serp_max_pages=serp_max_pages,
        strategy=strategy,
        time_range=time_range,
        region=region,
        task_id=raw.get("task_id") or None,
        job_id=raw.get("_job") or None,
        cache=cache,
        novelty_scope=novelty_scope,
        sources=sources,
        harvest_rate=harvest_rate,
        resume=resume == "true",
        citation_depth=citation_depth,
        citation_top_k=citation_top_k,
    )
    if not raw.get("sources"):
        arguments = _without_default_misfits(config, arguments)
    check_engines_take(config, arguments)
    return arguments


def _without_default_misfits(config: LyraConfig, arguments: CrawlArguments) -> CrawlArguments:
    """The default sources less the scholarly APIs that cannot take the query, each recorded
    with why: a user who asked for a time range or a long query without naming sources wants
    the sources that can take it, not a refusal."""
    apis = [source for source in arguments.sources if source != SERP_SOURCE]
    left_out = query_misfits(config, apis, arguments)
    if not left_out:
        return arguments
    kept = tuple(source for source in arguments.sources if source not in left_out)
    return replace(arguments, sources=kept, sources_left_out=left_out)


def _utf8(text: str) -> bool:
    """Whether `text` can be stored: no lone surrogate (an invalid byte of a command line)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _one_of(value: Any, choices: tuple[str, ...], name: str) -> str:
    if value not in choices:
        raise ArgumentError(f"{name} must be one of {', '.join(choices)} (got {show(value)})")
    return value


def scholarly_sources(config: LyraConfig) -> list[str]:
    """Scholarly APIs that can run beside the SERP engine: implemented and enabled."""
    return [name for name in usable_engines(config) if config.engines[name].scholarly]


def parse_sources(raw: Any, config: LyraConfig) -> tuple[str, ...]:
    """`serp,semantic_scholar,openalex` -> its names, checked; `serp` is the query's engine."""
    if raw is None:
        names = [name for name in DEFAULT_SOURCES if name == SERP_SOURCE or name in config.engines]
    else:
        names = [name.strip() for name in str(raw).split(",") if name.strip()]
    allowed = [SERP_SOURCE, *scholarly_sources(config)]
    for name in names:
        if name not in allowed:
            raise ArgumentError(
                f"source {show(name)} is not available: use a comma-separated list of "
                f"{', '.join(allowed)} (e.g. -a sources=serp,openalex)"
            )
    if not names:
        raise ArgumentError(f"sources is empty: use one or more of {', '.join(allowed)}")
    return tuple(dict.fromkeys(names))


def crawl_sources(engine: str | None, sources: tuple[str, ...]) -> list[str]:
    """The engines one crawl queries, in order: its SERP engine (when `serp` is a source),
    then the scholarly APIs. The cache key and the spider both use this list."""
    apis = [name for name in sources if name not in (SERP_SOURCE, engine)]
    return ([engine] if engine and SERP_SOURCE in sources else []) + apis


# Arguments of `scrapy crawl papers` (lyra_crawl.spiders.papers).
PAPERS_ARGUMENTS = frozenset({"task_id", "query_id"})


@dataclass(frozen=True)
class PapersTarget:
    """The papers a `papers` crawl reads the landing pages of: one task's, or one query's."""

    task_id: str | None = None
    query_id: int | None = None
    job_id: str | None = None


def parse_papers_target(raw: Mapping[str, Any]) -> PapersTarget:
    """`-a task_id=T` or `-a query_id=N` (exactly one), checked."""
    unknown = sorted(set(raw) - PAPERS_ARGUMENTS - SCRAPYD_ARGUMENTS)
    if unknown:
        raise ArgumentError(
            f"unknown spider argument '{unknown[0]}' for the papers spider: "
            "use -a task_id=T or -a query_id=N"
        )
    task_id = str(raw.get("task_id") or "").strip() or None
    query_id = raw.get("query_id")
    if task_id is None and query_id is None:
        raise ArgumentError(
            "the papers spider reads the papers of a task or of a query: "
            "-a task_id=T or -a query_id=N"
        )
    if task_id is not None and query_id is not None:
        raise ArgumentError(
            "task_id and query_id cannot go together: give -a task_id=T or -a query_id=N"
        )
    return PapersTarget(
        task_id=task_id,
        query_id=None if query_id is None else _whole_number(query_id, "query_id", 1, None),
        job_id=raw.get("_job") or None,
    )


def parse_papers_budget(raw: Any) -> int:
    """LYRA_PAPERS_DAILY_BUDGET: landing pages a day, a whole number of at least 1."""
    try:
        budget = int(str(raw).strip())
    except ValueError:
        budget = 0
    if budget < 1:
        raise ArgumentError(
            f"LYRA_PAPERS_DAILY_BUDGET must be a whole number of pages of at least 1 "
            f"(got {show(raw)}): -s LYRA_PAPERS_DAILY_BUDGET=500"
        )
    return budget
