"""Read config/search_parsers.yaml and config/engines.yaml and validate them into a LyraConfig.

The folder is `LYRA_CONFIG_DIR` when set; otherwise the config bundled with the package, found
through importlib.resources so it also works from a Scrapyd egg.
"""

from __future__ import annotations

import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from lyra_crawl.config.bounded_yaml import YamlLimits, YamlRefused, load_yaml, read_text
from lyra_crawl.config.errors import ConfigError, config_error
from lyra_crawl.config.models import (
    PARSERS_FILE,
    POLICY_FILE,
    CheckedPolicyFile,
    LyraConfig,
    ParsersFile,
)

# search_parsers.yaml is ~31 KB and ~1,300 values; engines.yaml a fifth of that.
CONFIG_LIMITS = YamlLimits(
    max_bytes=1_000_000,
    max_values=100_000,
    max_part_values=100_000,
    part="one section (engines:, pagination:, …)",
    max_list_items=10_000,
    fix="check that the right file is in place",
)
# Where setup.py puts config/ inside the package (eggs, wheels).
BUNDLED_FOLDER = "bundled_config"

_PARSERS = TypeAdapter(ParsersFile)
_POLICY = TypeAdapter(CheckedPolicyFile)


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
    parsers = _validate(_PARSERS, parsers_doc, PARSERS_FILE)
    policy = _validate(_POLICY, policy_doc, POLICY_FILE, context={"engines": parsers.engines})
    return LyraConfig(
        engines=parsers.engines,
        policies=policy.engines,
        pagination=policy.pagination,
        cache_ttl_hours=policy.cache.ttl_hours,
        breaker=policy.breaker,
        lastmile=policy.lastmile,
        papers=policy.papers,
        citations=policy.citations,
        retrieval=policy.retrieval,
        source=source,
    )


def _validate(
    schema: TypeAdapter[Any], doc: dict[str, Any], filename: str, context: Any = None
) -> Any:
    try:
        return schema.validate_python(doc, context=context)
    except ValidationError as error:
        raise config_error(error, filename) from None


def _read_file(path: Path) -> str:
    try:
        return read_text(path, CONFIG_LIMITS)
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found: copy it from the bundled config/") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc}): check its permissions") from None
    except YamlRefused as exc:
        raise ConfigError(f"{path}: {exc}") from None


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
    try:
        doc = load_yaml(text, CONFIG_LIMITS)
    except YamlRefused as exc:
        raise ConfigError(f"{filename}: {exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{filename}: must be a mapping with an 'engines:' section")
    return doc
