"""Spider arguments: `-a name=value` pairs validated into typed records. Pure.

A record's annotations are the pydantic schema its arguments are validated against (as the
config's, lyra_crawl.config.models), each field of a kind in query.argument_fields, the rules
across fields its validators; one ArgumentError line names the first problem, shaped as the
config's are. Called by SerpSpider and, before the crawl starts, by the `crawl` command, so a bad
argument ends the run with one clear message and no request; a batch entry's options
(batch.files) are checked by the same record, word for word.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainValidator,
    SkipValidation,
    TypeAdapter,
    ValidationInfo,
)

from lyra_crawl.config import CITATION_DEPTHS, STRATEGIES, TIME_RANGES, LyraConfig
from lyra_crawl.config.errors import problem
from lyra_crawl.config.fields import one_of
from lyra_crawl.engines.request import QueryError, check_query_options
from lyra_crawl.paging.stop_rules import SERP_MAX_PAGES_LIMIT
from lyra_crawl.politeness.selection import normal_engines
from lyra_crawl.query.argument_fields import (
    ArgumentError,
    Flag,
    Share,
    Text,
    choice,
    utf8,
    validated,
    whole,
)
from lyra_crawl.quoting import show

SERP_MAX_PAGES_RANGE = (1, SERP_MAX_PAGES_LIMIT)
CACHE_MODES = ("use", "refresh", "off")
SERP_SOURCE = "serp"
DEFAULT_SOURCES = (SERP_SOURCE, "semantic_scholar", "openalex")
NOVELTY_SCOPES = ("query", "history")
# Arguments Scrapyd adds to every job; accepted and ignored apart from the job id.
SCRAPYD_ARGUMENTS = frozenset({"_job", "_version", "setting"})
# Arguments of a crawl that runs a stored batch (`scrapy batch FILE` records it).
BATCH_ARGUMENTS = frozenset({"batch", "concurrency"})


def _query(raw: Any) -> str:
    if raw is None or not str(raw).strip():
        raise problem('is required and must not be blank: -a query="your search"')
    return str(raw)


def _engine(raw: Any, info: ValidationInfo) -> str | None:
    name = raw or None
    why = None if name is None else engine_refusal(info.context, name)
    if why is not None:
        raise problem(why)
    return name


def _sources(raw: Any, info: ValidationInfo) -> tuple[str, ...]:
    """`serp,semantic_scholar,openalex` -> its names, checked; `serp` is the query's engine;
    not given, the default sources the config has."""
    config: LyraConfig = info.context
    if raw is None:
        names = [name for name in DEFAULT_SOURCES if name == SERP_SOURCE or name in config.engines]
    else:
        names = [name.strip() for name in str(raw).split(",") if name.strip()]
    allowed = [SERP_SOURCE, *scholarly_sources(config)]
    for name in names:
        if name not in allowed:
            raise problem(
                f"names {show(name)}, which is not available: use a comma-separated list of "
                f"{', '.join(allowed)} (e.g. -a sources=serp,openalex)"
            )
    if not names:
        raise problem(f"is empty: use one or more of {', '.join(allowed)}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, kw_only=True)
class CrawlArguments:
    """One query's crawl, as its spider arguments say.

    The annotations are the schema `parse_crawl_arguments` validates the arguments against,
    with the config as context; fields are declared in the order they have always been checked,
    so the first problem reported is the same one as ever. Built in code, it validates nothing.
    """

    query: Annotated[str, PlainValidator(_query)]
    # The config's default when not given (_given).
    strategy: Annotated[str, one_of(STRATEGIES)]
    serp_page: Annotated[int, whole(1)] = 1
    serp_max_pages: Annotated[int, whole(*SERP_MAX_PAGES_RANGE)] = SERP_MAX_PAGES_LIMIT
    time_range: Annotated[str | None, choice(TIME_RANGES, blank=None)] = None
    region: Annotated[str | None, Text] = None
    cache: Annotated[str, choice(CACHE_MODES, blank="use")] = "use"
    novelty_scope: Annotated[str, choice(NOVELTY_SCOPES, blank="query")] = "query"
    sources: Annotated[tuple[str, ...], PlainValidator(_sources)] = DEFAULT_SOURCES
    engine: Annotated[str | None, PlainValidator(_engine)] = None
    harvest_rate: Annotated[float | None, Share] = None
    resume: Annotated[bool, Flag] = False
    # The citation graph: how many steps out, from how many papers per step (engines.yaml
    # `citations:` gives the defaults).
    citation_depth: Annotated[int, whole(*CITATION_DEPTHS)] = 0
    citation_top_k: Annotated[int, whole(1)] = 1
    task_id: Annotated[str | None, Text] = None
    # Set by the crawl, never an argument: Scrapyd's job id (its `_job`), and the default
    # sources left out because they cannot take this query (a time range, a long query), each
    # with why; sources a user names are never left out: they refuse instead.
    job_id: Annotated[str | None, Field(alias="_job"), Text] = None
    sources_left_out: Annotated[Mapping[str, str], SkipValidation] = field(default_factory=dict)


# The spider arguments of one query's crawl: the record's fields, but those the crawl sets.
KNOWN_ARGUMENTS = frozenset(f.name for f in fields(CrawlArguments)) - {"job_id", "sources_left_out"}


def _given(raw: Mapping[str, Any], info: ValidationInfo) -> Mapping[str, Any]:
    """The arguments given, checked by name, with the config's defaults for those left out
    (the strategy, empty too) and the query there to be refused in its own words."""
    if "concurrency" in raw:
        raise problem("goes with a stored batch: -a batch=ID -a concurrency=N", "concurrency")
    unknown = sorted(set(raw) - KNOWN_ARGUMENTS - SCRAPYD_ARGUMENTS)
    if unknown:
        raise problem(
            f"unknown spider argument {show(unknown[0])}: "
            f"use one of {', '.join(sorted(KNOWN_ARGUMENTS | BATCH_ARGUMENTS))}"
        )
    for name, value in raw.items():
        if isinstance(value, str) and not utf8(value):
            raise problem(f"is not UTF-8 text (got {show(value)}): fix its encoding", name)
    config: LyraConfig = info.context
    return {
        "query": None,
        "serp_max_pages": config.pagination.serp_max_pages,
        "sources": None,
        "citation_depth": config.citations.depth,
        "citation_top_k": config.citations.top_k,
        **raw,
        "strategy": raw.get("strategy") or config.pagination.strategy,
    }


def _argument_rules(arguments: CrawlArguments, info: ValidationInfo) -> CrawlArguments:
    engine, sources = arguments.engine, arguments.sources
    if engine is None:
        if not usable_engines(info.context):
            raise problem("no engine is enabled in engines.yaml: enable one or pass -a engine=")
    elif SERP_SOURCE not in sources and engine not in sources:
        raise problem(
            f"{show(engine)} is given but sources ({','.join(sources)}) has no serp: "
            "add serp to sources or leave engine out",
            "engine",
        )
    return arguments


_CRAWL_ARGUMENTS = TypeAdapter(
    Annotated[CrawlArguments, BeforeValidator(_given), AfterValidator(_argument_rules)]
)


def parse_crawl_arguments(raw: Mapping[str, Any], config: LyraConfig) -> CrawlArguments:
    """One query's crawl from its arguments: ArgumentError naming the first problem, or the
    first engine the query goes to that cannot take it."""
    arguments = validated(_CRAWL_ARGUMENTS, raw, config)
    # Whether the query fits its engines is asked after the fields are read, of the engines
    # as they stand then: the same question session.opening asks again of the engines it ends
    # up with, whoever picked them.
    if not raw.get("sources"):
        arguments = _without_default_misfits(config, arguments)
    check_engines_take(config, arguments)
    return arguments


@dataclass(frozen=True)
class SingleQuery:
    """`-a query=…`: a crawl of one query."""

    arguments: CrawlArguments


def _batch_given(raw: Mapping[str, Any], info: ValidationInfo) -> Mapping[str, Any]:
    beside = sorted(set(raw) - BATCH_ARGUMENTS - SCRAPYD_ARGUMENTS)
    if beside:
        raise problem(
            f"spider argument {show(beside[0])} cannot go with -a batch=: a batch's entries "
            "carry their own arguments (put it in the batch file's defaults)"
        )
    return {"concurrency": default_concurrency(info.context), **raw}


@dataclass(frozen=True, kw_only=True)
class StoredBatch:
    """`-a batch=ID`: a crawl of a stored batch's entries, `concurrency` queries at a time."""

    batch_id: Annotated[int, Field(alias="batch"), whole(1, argument="batch")]
    concurrency: Annotated[int, whole(1)]
    job_id: Annotated[str | None, Field(alias="_job"), Text] = None


_STORED_BATCH = TypeAdapter(Annotated[StoredBatch, BeforeValidator(_batch_given)])

LaunchPlan = SingleQuery | StoredBatch


def parse_launch(raw: Mapping[str, Any], config: LyraConfig) -> LaunchPlan:
    """What a crawl runs: one query, or the entries of a stored batch."""
    if "batch" in raw:
        return validated(_STORED_BATCH, raw, config)
    return SingleQuery(parse_crawl_arguments(raw, config))


def default_concurrency(config: LyraConfig) -> int:
    """Queries a batch runs at once unless told: two per engine the frontier may choose.

    Each engine answers one request at a time and a query asks for its next page only after
    the last one is parsed, so a second query per engine keeps it busy in the meantime.
    """
    choosable = [n for n in usable_engines(config) if config.policies[n].weight > 0]
    return max(2 * len(choosable), 2)


def usable_engines(config: LyraConfig) -> list[str]:
    """Engines that can be crawled now: implemented and enabled."""
    return sorted(
        name
        for name, spec in config.engines.items()
        if spec.implemented and name in config.policies and config.policies[name].enabled
    )


def engine_refusal(config: LyraConfig, engine: str) -> str | None:
    """Why a crawl cannot name `engine`, said of it (`'x' is unknown: use one of …`); None when
    it can."""
    usable = ", ".join(usable_engines(config))
    if engine not in config.engines:
        return f"{show(engine)} is unknown: use one of {usable}"
    if not config.engines[engine].implemented:
        return f"{show(engine)} is not implemented yet: use one of {usable}"
    policy = config.policies.get(engine)
    if policy is None or not policy.enabled:
        return f"{show(engine)} is disabled in engines.yaml: enable it there or use one of {usable}"
    return None


def check_engine(config: LyraConfig, engine: str) -> None:
    """ArgumentError unless a crawl can name `engine`."""
    why = engine_refusal(config, engine)
    if why is not None:
        raise ArgumentError(f"engine {why}")


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


def scholarly_sources(config: LyraConfig) -> list[str]:
    """Scholarly APIs that can run beside the SERP engine: implemented and enabled."""
    return [name for name in usable_engines(config) if config.engines[name].scholarly]


def crawl_sources(engine: str | None, sources: tuple[str, ...]) -> list[str]:
    """The engines one crawl queries, in order: its SERP engine (when `serp` is a source),
    then the scholarly APIs. The cache key and the spider both use this list."""
    apis = [name for name in sources if name not in (SERP_SOURCE, engine)]
    return ([engine] if engine and SERP_SOURCE in sources else []) + apis
