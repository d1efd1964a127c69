"""ConfigError, and pydantic's validation errors turned into its one-line message.

Every message names the file, the engine (or section), the field path, the offending value and
the fix: `search_parsers.yaml: engine 'bing': results_per_page must be a whole number (got 'ten')`.
Rules the models check themselves raise `problem(...)` with their own wording; pydantic's type
errors get theirs from `_TYPE_FIXES`.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

from lyra_crawl.quoting import show

PROBLEM = "lyra_config"

# The fix for each of pydantic's type errors; {value} is the offending value as `show` gives it.
_TYPE_FIXES = {
    "missing": "is missing: add it",
    "bool_type": "must be true or false (got {value})",
    "int_type": "must be a whole number (got {value})",
    "float_type": "must be a number (got {value})",
    "string_type": "must be a string (got {value})",
    "list_type": "must be a list (got {value})",
    "tuple_type": "must be a list (got {value})",
}
_MAPPING_TYPES = frozenset({"dict_type", "dataclass_type", "model_type"})


class ConfigError(ValueError):
    """A config file is wrong; the message names the file, engine, field and fix."""


def where(filename: str, engine: str, field: str) -> str:
    """`file: engine 'name': field`, leaving out what is empty; the name quoted as Python
    quotes it, so that one with a line break in it keeps the message on one line."""
    return ": ".join(
        part for part in (filename, engine and f"engine {show(engine)}", field) if part
    )


def problem(text: str, *at: str | int) -> PydanticCustomError:
    """A broken rule: `text` says what is wrong and the fix; `at` is the field it concerns,
    relative to the value being validated (empty: that value itself)."""
    return PydanticCustomError(PROBLEM, "{text}", {"text": text, "at": at})


def not_one_of(choices: tuple[str, ...], value: Any, *at: str | int) -> PydanticCustomError:
    return problem(f"must be one of {', '.join(choices)} (got {show(value)})", *at)


def config_error(error: ValidationError, filename: str) -> ConfigError:
    """The first of `error`'s problems, the one the file's checks meet first, as a ConfigError."""
    first = error.errors(include_url=False)[0]
    context = first.get("ctx", {})
    loc = [part for part in (*first["loc"], *context.get("at", ())) if part != "[key]"]
    engine = str(loc[1]) if len(loc) > 1 and loc[0] == "engines" else ""
    field = _path(loc[2:] if engine else loc)
    kind = first["type"]
    if kind == PROBLEM:
        text = context["text"]
    elif kind in _MAPPING_TYPES:
        text = f"must be a mapping (got {type(first['input']).__name__})"
        field = field or "engine"
    else:
        fix = _TYPE_FIXES.get(kind, "is not valid ({reason}): fix it")
        text = fix.format(value=show(first["input"]), reason=first["msg"])
    # Rules that quote a checker's own sentence put it after a colon: `allowed_hours[1]: …`.
    joint = "" if text.startswith(":") else " "
    return ConfigError(f"{where(filename, engine, field)}{joint}{text}")


def _path(loc: list[Any]) -> str:
    """`blocks[2].kind` from ("blocks", 2, "kind"); a key that is not plain text is quoted."""
    return "".join(
        f"[{part}]"
        if isinstance(part, int)
        else f".{part if str(part).isprintable() else show(part)}"
        for part in loc
    ).lstrip(".")
