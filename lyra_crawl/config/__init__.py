"""Load and validate config/search_parsers.yaml and config/engines.yaml into typed objects.

Every problem is reported as one ConfigError naming the file, the engine, the field, the value
and the fix, before any request is sent. `models` declares the typed objects, which are also the
schema pydantic validates the YAML against; `errors` turns pydantic's errors into ConfigError;
`loading` reads the files (LYRA_CONFIG_DIR or the bundled config).
"""

from lyra_crawl.config.errors import ConfigError
from lyra_crawl.config.loading import (
    BUNDLED_FOLDER,
    MAX_CONFIG_CHARS,
    SafeLoader,
    load_config,
    parse_config,
    read_bundled,
)
from lyra_crawl.config.models import (
    DEFAULT_COOLDOWNS_S,
    FAMILIES,
    FOLLOW_UP_PLACEHOLDERS,
    HOST_PLACEHOLDERS,
    NEXT_PAGE_MODES,
    PAGINATION_TYPES,
    PARAM_PLACEHOLDERS,
    PARSER_HOOKS,
    PARSERS_FILE,
    POLICY_FILE,
    RENDERS,
    REQUIRED_HTML_RULES,
    SECRET_PLACEHOLDERS,
    SECRET_SETTINGS,
    STRATEGIES,
    TIME_RANGES,
    BlockRule,
    BreakerPolicy,
    EnginePolicy,
    EngineSpec,
    FollowUp,
    LastMilePolicy,
    Layout,
    LyraConfig,
    NoResultsMarkers,
    PaginationDefaults,
    PapersPolicy,
)

__all__ = [
    "BUNDLED_FOLDER",
    "DEFAULT_COOLDOWNS_S",
    "FAMILIES",
    "FOLLOW_UP_PLACEHOLDERS",
    "HOST_PLACEHOLDERS",
    "MAX_CONFIG_CHARS",
    "NEXT_PAGE_MODES",
    "PAGINATION_TYPES",
    "PARAM_PLACEHOLDERS",
    "PARSERS_FILE",
    "PARSER_HOOKS",
    "POLICY_FILE",
    "RENDERS",
    "REQUIRED_HTML_RULES",
    "SECRET_PLACEHOLDERS",
    "SECRET_SETTINGS",
    "STRATEGIES",
    "TIME_RANGES",
    "BlockRule",
    "BreakerPolicy",
    "ConfigError",
    "EnginePolicy",
    "EngineSpec",
    "FollowUp",
    "LastMilePolicy",
    "Layout",
    "LyraConfig",
    "NoResultsMarkers",
    "PaginationDefaults",
    "PapersPolicy",
    "SafeLoader",
    "load_config",
    "parse_config",
    "read_bundled",
]
