"""ConfigError, and pydantic's validation errors turned into one line.

Every message names the file, the engine (or section), the field path, the offending value and
the fix: `search_parsers.yaml: engine 'bing': results_per_page must be a whole number (got 'ten')`.
Rules the models check themselves raise `problem(...)` with their own wording; pydantic's type
errors get theirs from `_TYPE_FIXES`. Spider arguments and batch files are shaped the same way
(`said`: the argument or the entry's field, then what is wrong and the fix).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

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


class Problem(NamedTuple):
    """One of pydantic's problems: where (the path to the field, from the value validated),
    what is wrong with the fix, and pydantic's kind of error."""

    loc: list[str | int]
    text: str
    kind: str


def first_problem(error: ValidationError) -> Problem:
    """The first of `error`'s problems, the one the checks meet first."""
    first = error.errors(include_url=False)[0]
    context = first.get("ctx", {})
    loc = [part for part in (*first["loc"], *context.get("at", ())) if part != "[key]"]
    kind = first["type"]
    if kind == PROBLEM:
        text = context["text"]
    elif kind in _MAPPING_TYPES:
        text = f"must be a mapping (got {type(first['input']).__name__})"
    else:
        fix = _TYPE_FIXES.get(kind, "is not valid ({reason}): fix it")
        text = fix.format(value=show(first["input"]), reason=first["msg"])
    return Problem(loc, text, kind)


def sentence(subject: str, text: str) -> str:
    """`subject text`: what is wrong said of the thing it concerns. A rule that quotes a
    checker's own sentence puts it after a colon (`allowed_hours[1]: …`); without a subject
    the text is the whole sentence."""
    if not subject:
        return text.removeprefix(": ")
    joint = "" if text.startswith(":") else " "
    return f"{subject}{joint}{text}"


def said(error: ValidationError) -> str:
    """`error`'s first problem in one line, naming the field of the value validated:
    `serp_max_pages must be a whole number from 1 to 10 (got '11'): -a serp_max_pages=N`."""
    found = first_problem(error)
    return sentence(field_path(found.loc), found.text)


def config_error(error: ValidationError, filename: str) -> ConfigError:
    """The first of `error`'s problems, the one the file's checks meet first, as a ConfigError."""
    found = first_problem(error)
    loc = found.loc
    engine = str(loc[1]) if len(loc) > 1 and loc[0] == "engines" else ""
    field = field_path(loc[2:] if engine else loc)
    if found.kind in _MAPPING_TYPES:
        field = field or "engine"
    return ConfigError(sentence(where(filename, engine, field), found.text))


def field_path(loc: Sequence[Any]) -> str:
    """`blocks[2].kind` from ("blocks", 2, "kind"); a key that is not plain text is quoted."""
    return "".join(
        f"[{part}]"
        if isinstance(part, int)
        else f".{part if str(part).isprintable() else show(part)}"
        for part in loc
    ).lstrip(".")
