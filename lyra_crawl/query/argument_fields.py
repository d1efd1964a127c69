"""What a spider argument may hold, read from its text. Pure.

`-a name=value` gives text; a batch entry's options are made the same text, and code may give a
number. Each kind below reads any of them into the value a crawl uses, as a pydantic validator of
an arguments record's field (query.arguments), and refuses with config.errors.problem in the words
users know; `validated` turns pydantic's error into one ArgumentError line, shaped as the
config's are (config.errors.said): `serp_max_pages must be a whole number from 1 to 10 (got
'11'): -a serp_max_pages=N`.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import PlainValidator, TypeAdapter, ValidationError, ValidationInfo

from lyra_crawl.config.errors import not_one_of, problem, said
from lyra_crawl.quoting import show

Record = TypeVar("Record")


class ArgumentError(ValueError):
    """A spider argument is wrong; the message names it, the value and the fix."""


def validated(schema: TypeAdapter[Record], raw: Any, context: Any = None) -> Record:
    """`raw` read by `schema` (validators find `context` in their ValidationInfo), or
    ArgumentError naming the first problem."""
    try:
        return schema.validate_python(raw, context=context)
    except ValidationError as error:
        raise ArgumentError(said(error)) from None


def whole(low: int, high: int | None = None, *, argument: str = "") -> PlainValidator:
    """A whole number from `low` to `high` (or at least `low`). The fix names the argument as
    given (`argument`, when the field is named otherwise)."""
    span = f"from {low} to {high}" if high is not None else f">= {low}"

    def read(raw: Any, info: ValidationInfo) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            name = argument or info.field_name
            raise problem(f"must be a whole number {span} (got {show(raw)}): -a {name}=N")
        return value

    return PlainValidator(read)


def choice(choices: tuple[str, ...], *, blank: str | None) -> PlainValidator:
    """One of `choices`; left empty (`-a cache=`), `blank`."""

    def read(raw: Any) -> str | None:
        value = raw or blank
        if value is not None and value not in choices:
            raise not_one_of(choices, value)
        return value

    return PlainValidator(read)


# Any text; left empty, none.
Text = PlainValidator(lambda raw: raw or None)


def _share(raw: Any) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = None
    # Written so that NaN is refused too.
    if value is None or not 0.0 <= value <= 1.0:
        raise problem(f"must be a number from 0 to 1 (got {show(raw)}): -a harvest_rate=0.95")
    return value


# A number from 0 to 1 (harvest_rate).
Share = PlainValidator(_share)


def _flag(raw: Any) -> bool:
    text = str(raw or "false").lower()
    if text not in ("true", "false"):
        raise problem(f"must be one of true, false (got {show(text)})")
    return text == "true"


# true or false, in any case; left empty, false.
Flag = PlainValidator(_flag)


def utf8(text: str) -> bool:
    """Whether `text` can be stored: no lone surrogate (an invalid byte of a command line)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
