"""Load and validate config/search_parsers.yaml and config/engines.yaml into typed objects.

Every problem is reported as one ConfigError naming the file, the engine, the field and the fix,
before any request is sent. The folder is `LYRA_CONFIG_DIR` when set; otherwise the config bundled
with the package, found through importlib.resources so it also works from a Scrapyd egg.
"""

from __future__ import annotations

import os
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from lyra_crawl.engines.base import BLOCK_OUTCOMES, Outcome
from lyra_crawl.politeness.hours import HourWindow, parse_window

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PARSERS_FILE = "search_parsers.yaml"
MAX_CONFIG_CHARS = 1_000_000
POLICY_FILE = "engines.yaml"
# Where setup.py puts config/ inside the package (eggs, wheels).
BUNDLED_FOLDER = "bundled_config"

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


class ConfigError(ValueError):
    """A config file is wrong; the message names the file, engine, field and fix."""


@dataclass(frozen=True)
class BlockRule:
    """Markers that identify a block page; any one of them matching is enough."""

    kind: Outcome
    status: tuple[int, ...] = ()
    body_contains: tuple[str, ...] = ()
    url_contains: tuple[str, ...] = ()
    xpath: tuple[str, ...] = ()


@dataclass(frozen=True)
class FollowUp:
    """A second request that completes a page (PubMed: esummary for the ids esearch found)."""

    url: str
    params: Mapping[str, str]


@dataclass(frozen=True)
class EngineSpec:
    """How to talk to one engine (search_parsers.yaml)."""

    name: str
    implemented: bool
    family: str
    render: str
    url: str
    method: str
    params: Mapping[str, str]
    pagination_type: str
    pagination_param: str
    results_per_page: int
    offset_base: int
    page_base: int
    first_page_omits: tuple[str, ...]
    next_page: str
    next_page_form: str | None
    token_page: str | None
    token_fields: tuple[str, ...]
    follow_up: FollowUp | None
    parser: str | None
    max_pages: int
    # The deepest result the engine serves by offset or page (offset + limit <= it), if capped.
    max_results_window: int | None
    max_query_length: int
    time_range: Mapping[str, str]
    region: Mapping[str, str]
    default_region: str | None
    # Each rule is a list of XPath alternatives, tried in order until one finds something.
    parse: Mapping[str, tuple[str, ...]]
    blocks: tuple[BlockRule, ...]
    # Request headers; values may use only secret placeholders ({s2_api_key}, …).
    headers: Mapping[str, str] = field(default_factory=dict)
    # A scholarly source (paper records, not web pages): the unified-sources side of a crawl.
    scholarly: bool = False

    @property
    def host(self) -> str:
        """The configured host, with any {language} placeholder left in place."""
        return urlsplit(self.url).hostname or ""


@dataclass(frozen=True)
class EnginePolicy:
    """What the project is allowed to do with one engine (engines.yaml)."""

    name: str
    enabled: bool
    weight: float
    qps: float
    daily_limit: int | None
    lastmile: bool
    pagination_enabled: bool
    # UTC windows in which requests may go out; empty = any hour.
    allowed_hours: tuple[HourWindow, ...] = ()


@dataclass(frozen=True)
class PaginationDefaults:
    serp_max_pages: int = 10
    min_novelty_rate: float = 0.1
    min_harvest_rate: float = 0.05
    strategy: str = "auto"
    relevance_threshold: float = 0.2


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


@dataclass(frozen=True)
class BreakerPolicy:
    """When an engine's circuit breaker opens and for how long (engines.yaml `breaker:`)."""

    failure_threshold: int = 3
    cooldown_s: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_COOLDOWNS_S))
    max_cooldown_s: float = 86400.0


@dataclass(frozen=True)
class LastMilePolicy:
    """When and in which order last-mile engines are tried (engines.yaml `lastmile:`)."""

    threshold: float = 0.9
    order: tuple[str, ...] = ("brave", "google", "bing")
    # At most this share of a task's queries may go last-mile.
    max_share: float = 0.1


@dataclass(frozen=True)
class LyraConfig:
    engines: Mapping[str, EngineSpec]
    policies: Mapping[str, EnginePolicy]
    pagination: PaginationDefaults = field(default_factory=PaginationDefaults)
    cache_ttl_hours: float = 24.0
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    lastmile: LastMilePolicy = field(default_factory=LastMilePolicy)
    source: str = ""

    def engine(self, name: str) -> EngineSpec:
        return self.engines[name]

    def policy(self, name: str) -> EnginePolicy:
        return self.policies[name]


def load_config(config_dir: str | os.PathLike[str] | None = None) -> LyraConfig:
    """Load both files from `config_dir`, `LYRA_CONFIG_DIR`, or the bundled config."""
    config_dir = config_dir or os.environ.get("LYRA_CONFIG_DIR") or None
    if config_dir:
        folder = Path(config_dir)
        if not folder.is_dir():
            raise ConfigError(
                f"config folder {folder} does not exist: point LYRA_CONFIG_DIR at the folder "
                f"holding {PARSERS_FILE} and {POLICY_FILE}"
            )
        texts = {name: _read_file(folder / name) for name in (PARSERS_FILE, POLICY_FILE)}
        source = str(folder)
    else:
        texts = {name: read_bundled(name) for name in (PARSERS_FILE, POLICY_FILE)}
        source = "bundled config"
    return parse_config(texts[PARSERS_FILE], texts[POLICY_FILE], source=source)


@lru_cache(maxsize=8)
def parse_config(parsers_yaml: str, policy_yaml: str, *, source: str = "") -> LyraConfig:
    """Validate the text of both files; the pure core of load_config (cached by content)."""
    parsers_doc = _safe_load(parsers_yaml, PARSERS_FILE)
    policy_doc = _safe_load(policy_yaml, POLICY_FILE)
    engines_node = _mapping(
        _require(parsers_doc, "engines", PARSERS_FILE, ""), PARSERS_FILE, "", "engines"
    )
    engines = {name: _engine_spec(str(name), node) for name, node in engines_node.items()}
    policies_node = _mapping(
        _require(policy_doc, "engines", POLICY_FILE, ""), POLICY_FILE, "", "engines"
    )
    policies = {}
    for name, node in policies_node.items():
        if name not in engines:
            known = ", ".join(sorted(engines))
            raise ConfigError(
                f"{POLICY_FILE}: engine '{name}' is not described in {PARSERS_FILE}: "
                f"fix the name or add it there (known: {known})"
            )
        policies[str(name)] = _engine_policy(str(name), node)
    pagination = _pagination_defaults(policy_doc.get("pagination", {}))
    cache = _mapping(policy_doc.get("cache"), POLICY_FILE, "", "cache")
    ttl = _typed(cache.get("ttl_hours", 24.0), float, POLICY_FILE, "", "cache.ttl_hours")
    if ttl < 0:
        raise ConfigError(f"{POLICY_FILE}: cache.ttl_hours must be >= 0 (got {ttl:g})")
    return LyraConfig(
        engines=engines,
        policies=policies,
        pagination=pagination,
        cache_ttl_hours=ttl,
        breaker=_breaker_policy(policy_doc.get("breaker", {})),
        lastmile=_lastmile_policy(policy_doc.get("lastmile", {}), policies),
        source=source,
    )


def _read_file(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found: copy it from the bundled config/") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot be read ({exc}): check its permissions and encoding"
        ) from None


def read_bundled(name: str) -> str:
    """The text of `name` as bundled with the package (config/ in a source checkout)."""
    package = resources.files("lyra_crawl")
    # Eggs and wheels carry config/ as lyra_crawl/bundled_config (see setup.py); a source
    # checkout has the package beside the project's config/ folder.
    for candidate in (package / BUNDLED_FOLDER / name, package / ".." / "config" / name):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise ConfigError(f"bundled {name} not found: reinstall the package or set LYRA_CONFIG_DIR")


def _safe_load(text: str, filename: str) -> dict[str, Any]:
    if len(text) > MAX_CONFIG_CHARS:
        raise ConfigError(
            f"{filename}: {len(text)} characters is far more than a config needs "
            f"(limit {MAX_CONFIG_CHARS}): check that the right file is in place"
        )
    try:
        # The C loader is SafeLoader's libyaml twin: same safety, ten times faster.
        doc = yaml.load(text, Loader=SafeLoader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(
            f"{filename}:{line} is not valid YAML ({problem}): fix the syntax"
        ) from None
    except RecursionError:
        raise ConfigError(f"{filename}: nested too deeply to be a config: fix the file") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{filename}: must be a mapping with an 'engines:' section")
    return doc


def _where(filename: str, engine: str, field_name: str) -> str:
    prefix = f"{filename}: engine '{engine}'" if engine else filename
    return f"{prefix}: {field_name}"


def _require(node: Mapping[str, Any], key: str, filename: str, engine: str) -> Any:
    if key not in node:
        raise ConfigError(f"{_where(filename, engine, key)} is missing: add it")
    return node[key]


def _mapping(value: Any, filename: str, engine: str, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(
            f"{_where(filename, engine, key)} must be a mapping (got {type(value).__name__})"
        )
    return value


def _show(value: Any) -> str:
    """A short, safe rendering of a config value for error messages (never expands aliases)."""
    if value is None or isinstance(value, str | int | float | bool):
        text = repr(value)
        return text if len(text) <= 80 else f"{text[:76]}...{text[-1]}"
    return f"a {type(value).__name__}"


def _scalars(value: Any, filename: str, engine: str, key: str) -> dict[str, str]:
    """A mapping of plain values (strings, numbers), as text; nulls are left out."""
    result = {}
    for name, item in _mapping(value, filename, engine, key).items():
        if item is None:
            continue
        if not isinstance(item, str | int | float | bool):
            raise ConfigError(
                f"{_where(filename, engine, f'{key}.{name}')} must be a plain value "
                f"(got {_show(item)})"
            )
        result[str(name)] = str(item)
    return result


def _list(value: Any, filename: str, engine: str, key: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"{_where(filename, engine, key)} must be a list (got {_show(value)})")
    return value


def _optional_str(value: Any, filename: str, engine: str, key: str) -> str | None:
    return None if value is None else _typed(value, str, filename, engine, key)


def _optional_int(value: Any, filename: str, engine: str, key: str) -> int | None:
    """A whole number >= 1, or None when absent."""
    if value is None:
        return None
    number = _typed(value, int, filename, engine, key)
    if number < 1:
        raise ConfigError(f"{_where(filename, engine, key)} must be >= 1 (got {number})")
    return number


def _typed(value: Any, kind: type, filename: str, engine: str, key: str) -> Any:
    ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not ok:
        raise ConfigError(
            f"{_where(filename, engine, key)} must be {_type_name(kind)} (got {_show(value)})"
        )
    return value


def _type_name(kind: type) -> str:
    return {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}.get(
        kind, kind.__name__
    )


def _choice(value: Any, choices: tuple[str, ...], filename: str, engine: str, key: str) -> str:
    if value not in choices:
        raise ConfigError(
            f"{_where(filename, engine, key)} must be one of {', '.join(choices)} "
            f"(got {_show(value)})"
        )
    return value


def _placeholders(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ConfigError(f"bad template {template!r} ({exc}): balance the braces") from None


def _engine_spec(name: str, node: Any) -> EngineSpec:
    f = PARSERS_FILE
    node = _mapping(node, f, name, "engine")
    get = node.get
    url = _typed(_require(node, "url", f, name), str, f, name, "url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{_where(f, name, 'url')} must be an absolute http(s) URL (got {url!r})")
    bad_host = _placeholders(parts.netloc) - HOST_PLACEHOLDERS
    if bad_host or _placeholders(parts.path + parts.query):
        raise ConfigError(
            f"{_where(f, name, 'url')} may use only {{language}}, in the host (got {url!r}): "
            "put query values under params"
        )
    params = _template_params(
        get("params"), name, "params", PARAM_PLACEHOLDERS | SECRET_PLACEHOLDERS
    )
    headers = _template_params(get("headers"), name, "headers", SECRET_PLACEHOLDERS)
    pagination_type = _choice(
        _require(node, "pagination_type", f, name), PAGINATION_TYPES, f, name, "pagination_type"
    )
    results_per_page = _typed(
        _require(node, "results_per_page", f, name), int, f, name, "results_per_page"
    )
    if results_per_page < 1:
        raise ConfigError(
            f"{_where(f, name, 'results_per_page')} must be >= 1 (got {results_per_page})"
        )
    max_pages = _typed(_require(node, "max_pages", f, name), int, f, name, "max_pages")
    if max_pages < 1:
        raise ConfigError(f"{_where(f, name, 'max_pages')} must be >= 1 (got {max_pages})")
    window = _optional_int(get("max_results_window"), f, name, "max_results_window")
    offset_base = _typed(get("offset_base", 0), int, f, name, "offset_base")
    if window is not None and offset_base + max_pages * results_per_page > window:
        deepest = offset_base + max_pages * results_per_page
        raise ConfigError(
            f"{_where(f, name, 'max_pages')} {max_pages} with results_per_page "
            f"{results_per_page} reaches result {deepest}, past max_results_window {window} "
            "(the engine serves nothing deeper): lower max_pages or results_per_page"
        )
    first_page_omits = _string_list(get("first_page_omits"), f, name, "first_page_omits")
    for param in first_page_omits:
        if param not in params:
            raise ConfigError(
                f"{_where(f, name, 'first_page_omits')} names '{param}', which is not in params: "
                "remove it or add the parameter"
            )
    time_range = _scalars(get("time_range"), f, name, "time_range")
    for key in time_range:
        _choice(key, TIME_RANGES, f, name, f"time_range.{key}")
    region = _scalars(get("region"), f, name, "region")
    default_region = get("default_region")
    if default_region is not None:
        default_region = _typed(default_region, str, f, name, "default_region")
    if default_region is not None and default_region not in region:
        raise ConfigError(
            f"{_where(f, name, 'default_region')} is {default_region!r}, "
            "which is not a key of region"
        )
    family = _choice(_require(node, "family", f, name), FAMILIES, f, name, "family")
    parse = {
        str(k): _string_list(v, f, name, f"parse.{k}")
        for k, v in _mapping(get("parse"), f, name, "parse").items()
    }
    implemented = _typed(get("implemented", True), bool, f, name, "implemented")
    if implemented and family == "html":
        for rule in REQUIRED_HTML_RULES:
            if not parse.get(rule):
                raise ConfigError(f"{_where(f, name, f'parse.{rule}')} is missing: add an XPath")
    parser = get("parser")
    if family == "html" and parser is not None:
        raise ConfigError(
            f"{_where(f, name, 'parser')} is set, but html engines are parsed by their XPath "
            "rules: remove it"
        )
    if family != "html":
        parser = _choice(parser, PARSER_HOOKS, f, name, "parser")
    next_page = _choice(get("next_page", "formula"), NEXT_PAGE_MODES, f, name, "next_page")
    next_page_form = _optional_str(get("next_page_form"), f, name, "next_page_form")
    if next_page == "form" and not next_page_form:
        raise ConfigError(
            f"{_where(f, name, 'next_page_form')} is missing: next_page form needs the XPath "
            "of the next-page form"
        )
    token_page = _optional_str(get("token_page"), f, name, "token_page")
    if token_page is not None and urlsplit(str(token_page)).hostname != parts.hostname:
        raise ConfigError(
            f"{_where(f, name, 'token_page')} must be on the engine's host {parts.hostname} "
            f"(got {token_page!r})"
        )
    token_fields = _string_list(get("token_fields"), f, name, "token_fields")
    if bool(token_page) != bool(token_fields):
        raise ConfigError(
            f"{_where(f, name, 'token_page')} and token_fields go together: give both or neither"
        )
    return EngineSpec(
        name=name,
        implemented=implemented,
        family=family,
        render=_choice(get("render", "http"), RENDERS, f, name, "render"),
        url=url,
        method=_choice(get("method", "GET"), ("GET", "POST"), f, name, "method"),
        params=params,
        pagination_type=pagination_type,
        pagination_param=_typed(
            _require(node, "pagination_param", f, name), str, f, name, "pagination_param"
        ),
        results_per_page=results_per_page,
        offset_base=offset_base,
        page_base=_typed(get("page_base", 1), int, f, name, "page_base"),
        first_page_omits=first_page_omits,
        next_page=next_page,
        next_page_form=next_page_form,
        token_page=token_page,
        token_fields=token_fields,
        follow_up=_follow_up(name, get("follow_up"), parts.hostname),
        parser=parser,
        max_pages=max_pages,
        max_results_window=window,
        max_query_length=_typed(get("max_query_length", 2000), int, f, name, "max_query_length"),
        time_range=time_range,
        region=region,
        default_region=default_region,
        parse=parse,
        blocks=tuple(
            _block_rule(name, i, rule)
            for i, rule in enumerate(_list(get("blocks"), f, name, "blocks"))
        ),
        headers=headers,
        scholarly=_typed(get("scholarly", False), bool, f, name, "scholarly"),
    )


def _string_list(value: Any, filename: str, engine: str, key: str) -> tuple[str, ...]:
    """A string or a list of strings, as a tuple (empty when absent)."""
    if value is None:
        return ()
    values = value if isinstance(value, list) else [value]
    return tuple(_typed(v, str, filename, engine, key) for v in values)


def _follow_up(engine: str, node: Any, host: str | None) -> FollowUp | None:
    f = PARSERS_FILE
    if node is None:
        return None
    node = _mapping(node, f, engine, "follow_up")
    url = _typed(_require(node, "url", f, engine), str, f, engine, "follow_up.url")
    if urlsplit(url).hostname != host:
        raise ConfigError(
            f"{_where(f, engine, 'follow_up.url')} must be on the engine's host {host} "
            f"(got {url!r})"
        )
    params = _template_params(
        node.get("params"), engine, "follow_up.params", FOLLOW_UP_PLACEHOLDERS
    )
    return FollowUp(url=url, params=params)


def _template_params(
    node: Any, engine: str, key: str, placeholders: frozenset[str]
) -> dict[str, str]:
    """Query parameters whose values may use only the given {placeholders}."""
    f = PARSERS_FILE
    params = _scalars(node, f, engine, key)
    for name, template in params.items():
        unknown = _placeholders(template) - placeholders
        if unknown:
            raise ConfigError(
                f"{_where(f, engine, f'{key}.{name}')} uses unknown placeholder "
                f"{{{sorted(unknown)[0]}}}: use one of {', '.join(sorted(placeholders))}"
            )
    return params


def _block_rule(engine: str, index: int, node: Any) -> BlockRule:
    f = PARSERS_FILE
    node = _mapping(node, f, engine, f"blocks[{index}]")
    kinds = tuple(sorted(o.value for o in BLOCK_OUTCOMES))
    kind = _choice(node.get("kind"), kinds, f, engine, f"blocks[{index}].kind")
    status = node.get("status") or []
    body = node.get("body_contains") or []
    url = node.get("url_contains") or []
    xpath = node.get("xpath") or []
    for key, values, kind_type in (
        ("status", status, int),
        ("body_contains", body, str),
        ("url_contains", url, str),
        ("xpath", xpath, str),
    ):
        if not isinstance(values, list):
            raise ConfigError(f"{_where(f, engine, f'blocks[{index}].{key}')} must be a list")
        for value in values:
            _typed(value, kind_type, f, engine, f"blocks[{index}].{key}")
    if not (status or body or url or xpath):
        raise ConfigError(
            f"{_where(f, engine, f'blocks[{index}]')} has no marker: give status, body_contains, "
            "url_contains or xpath"
        )
    return BlockRule(Outcome(kind), tuple(status), tuple(body), tuple(url), tuple(xpath))


def _engine_policy(name: str, node: Any) -> EnginePolicy:
    f = POLICY_FILE
    node = _mapping(node, f, name, "engine")
    qps = _typed(_require(node, "qps", f, name), float, f, name, "qps")
    if not qps > 0:
        raise ConfigError(f"{_where(f, name, 'qps')} must be > 0 (got {qps:g})")
    weight = _typed(node.get("weight", 1.0), float, f, name, "weight")
    if weight < 0:
        raise ConfigError(f"{_where(f, name, 'weight')} must be >= 0 (got {weight:g})")
    daily_limit = node.get("daily_limit")
    if daily_limit is not None:
        daily_limit = _typed(daily_limit, int, f, name, "daily_limit")
        if daily_limit < 0:
            raise ConfigError(
                f"{_where(f, name, 'daily_limit')} must be >= 0, or null for no limit "
                f"(got {daily_limit})"
            )
    return EnginePolicy(
        name=name,
        enabled=_typed(node.get("enabled", True), bool, f, name, "enabled"),
        weight=weight,
        qps=qps,
        daily_limit=daily_limit,
        lastmile=_typed(node.get("lastmile", False), bool, f, name, "lastmile"),
        pagination_enabled=_typed(
            node.get("pagination_enabled", True), bool, f, name, "pagination_enabled"
        ),
        allowed_hours=_hour_windows(name, node.get("allowed_hours")),
    )


def _hour_windows(name: str, node: Any) -> tuple[HourWindow, ...]:
    f = POLICY_FILE
    windows = []
    for index, text in enumerate(_list(node, f, name, "allowed_hours")):
        try:
            windows.append(parse_window(text))
        except ValueError as exc:
            raise ConfigError(f"{_where(f, name, f'allowed_hours[{index}]')}: {exc}") from None
    return tuple(windows)


def _pagination_defaults(node: Any) -> PaginationDefaults:
    f = POLICY_FILE
    node = _mapping(node, f, "", "pagination")
    defaults = PaginationDefaults()
    serp_max_pages = _typed(
        node.get("serp_max_pages", defaults.serp_max_pages), int, f, "", "pagination.serp_max_pages"
    )
    if not 1 <= serp_max_pages <= 10:
        raise ConfigError(f"{f}: pagination.serp_max_pages must be 1..10 (got {serp_max_pages})")
    rates = {}
    for key in ("min_novelty_rate", "min_harvest_rate", "relevance_threshold"):
        value = _typed(node.get(key, getattr(defaults, key)), float, f, "", f"pagination.{key}")
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"{f}: pagination.{key} must be between 0 and 1 (got {value:g})")
        rates[key] = value
    strategy = _choice(
        node.get("strategy", defaults.strategy), STRATEGIES, f, "", "pagination.strategy"
    )
    return PaginationDefaults(serp_max_pages=serp_max_pages, strategy=strategy, **rates)


def _breaker_policy(node: Any) -> BreakerPolicy:
    f = POLICY_FILE
    node = _mapping(node, f, "", "breaker")
    defaults = BreakerPolicy()
    threshold = _typed(
        node.get("failure_threshold", defaults.failure_threshold),
        int,
        f,
        "",
        "breaker.failure_threshold",
    )
    if threshold < 1:
        raise ConfigError(f"{f}: breaker.failure_threshold must be >= 1 (got {threshold})")
    cooldowns = dict(defaults.cooldown_s)
    for kind, value in _mapping(node.get("cooldown_s"), f, "", "breaker.cooldown_s").items():
        key = f"breaker.cooldown_s.{kind}"
        _choice(kind, tuple(DEFAULT_COOLDOWNS_S), f, "", key)
        seconds = _typed(value, float, f, "", key)
        if not seconds > 0:
            raise ConfigError(f"{f}: {key} must be > 0 seconds (got {seconds:g})")
        cooldowns[kind] = seconds
    cap = _typed(
        node.get("max_cooldown_s", defaults.max_cooldown_s), float, f, "", "breaker.max_cooldown_s"
    )
    if cap < max(cooldowns.values()):
        raise ConfigError(
            f"{f}: breaker.max_cooldown_s ({cap:g}) must be >= every cool-down "
            f"(largest {max(cooldowns.values()):g})"
        )
    return BreakerPolicy(failure_threshold=threshold, cooldown_s=cooldowns, max_cooldown_s=cap)


def _lastmile_policy(node: Any, policies: Mapping[str, EnginePolicy]) -> LastMilePolicy:
    f = POLICY_FILE
    node = _mapping(node, f, "", "lastmile")
    defaults = LastMilePolicy()
    threshold = _typed(
        node.get("threshold", defaults.threshold), float, f, "", "lastmile.threshold"
    )
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"{f}: lastmile.threshold must be between 0 and 1 (got {threshold:g})")
    order = node.get("order", list(defaults.order))
    if not isinstance(order, list) or not all(isinstance(name, str) for name in order):
        raise ConfigError(
            f"{f}: lastmile.order must be a list of engine names (got {_show(order)})"
        )
    for name in order:
        if name not in policies or not policies[name].lastmile:
            raise ConfigError(
                f"{f}: lastmile.order names '{name}', which is not an engine with "
                "lastmile: true: fix the name or set lastmile: true on it"
            )
    for name, policy in policies.items():
        if policy.lastmile and name not in order:
            raise ConfigError(
                f"{f}: engine '{name}' has lastmile: true but is missing from lastmile.order: "
                "add it there"
            )
    max_share = _typed(
        node.get("max_share", defaults.max_share), float, f, "", "lastmile.max_share"
    )
    if not 0.0 <= max_share <= 1.0:
        raise ConfigError(f"{f}: lastmile.max_share must be between 0 and 1 (got {max_share:g})")
    return LastMilePolicy(threshold=threshold, order=tuple(order), max_share=max_share)
