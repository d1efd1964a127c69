"""Validated field types the config models are built from: strict scalars, lists, plain mappings.

Strict where YAML is easily mistaken: `true` is not a whole number and "5" is not a number, but
a whole number is a number. A key left empty (YAML's null) reads as absent where the files have
always allowed it (`null_as`).
"""

import string
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, PlainValidator, Strict
from pydantic_core import PydanticKnownError

from lyra_crawl.config.errors import not_one_of, problem
from lyra_crawl.quoting import show

Whole = Annotated[int, Strict()]
Number = Annotated[float, Strict()]
Flag = Annotated[bool, Strict()]
Text = Annotated[str, Strict()]
# YAML keys as text, whatever YAML made of them (`404:` is a number).
Key = Annotated[str, BeforeValidator(str)]


def null_as(empty: Any) -> BeforeValidator:
    """YAML's null (a key left empty) read as `empty`."""
    return BeforeValidator(lambda value: empty if value is None else value)


def one_of(choices: tuple[str, ...]) -> PlainValidator:
    return PlainValidator(lambda value: _chosen(value, choices))


def _chosen(value: Any, choices: tuple[str, ...]) -> Any:
    if value not in choices:
        raise not_one_of(choices, value)
    return value


def bounded(ok: Callable[[Any], bool], rule: str) -> AfterValidator:
    """A number that must pass `ok`; `rule` says what it must be ("must be >= 1")."""

    def check(number: float) -> float:
        if not ok(number):
            shown = f"{number:g}" if isinstance(number, float) else str(number)
            raise problem(f"{rule} (got {shown})")
        return number

    return AfterValidator(check)


AtLeastOne = Annotated[Whole, bounded(lambda n: n >= 1, "must be >= 1")]
# Written as "not below zero" so that, as ever, NaN passes.
NotNegative = Annotated[Number, bounded(lambda x: not x < 0, "must be >= 0")]
Share = Annotated[Number, bounded(lambda x: 0.0 <= x <= 1.0, "must be between 0 and 1")]


def _one_or_many(value: Any) -> Any:
    if value is None or isinstance(value, list):
        return value or []
    if isinstance(value, str):
        return [value]
    raise PydanticKnownError("string_type")


# One string or a list of them, as a tuple (empty when absent).
Strings = Annotated[tuple[Text, ...], BeforeValidator(_one_or_many)]


def _plain_text(value: Any) -> str | None:
    if value is None or isinstance(value, str | int | float | bool):
        return None if value is None else str(value)
    raise problem(f"must be a plain value (got {show(value)})")


def _without_nulls(values: dict[str, str | None]) -> dict[str, str]:
    return {key: value for key, value in values.items() if value is not None}


# A mapping of plain values (strings, numbers, true/false), as text; nulls are left out.
Scalars = Annotated[
    dict[Key, Annotated[str | None, PlainValidator(_plain_text)]],
    null_as({}),
    AfterValidator(_without_nulls),
]


def placeholders(template: str, *at: str) -> set[str]:
    """The {names} a template uses."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise problem(
            f"is a bad template {show(template)} ({exc}): balance the braces", *at
        ) from None


def templates(allowed: frozenset[str]) -> AfterValidator:
    """Plain values that may use only the `allowed` {placeholders}."""

    def check(values: Mapping[str, str]) -> Mapping[str, str]:
        for name, template in values.items():
            unknown = placeholders(template, name) - allowed
            if unknown:
                raise problem(
                    f"uses unknown placeholder {{{sorted(unknown)[0]}}}: "
                    f"use one of {', '.join(sorted(allowed))}",
                    name,
                )
        return values

    return AfterValidator(check)
