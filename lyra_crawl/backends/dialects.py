"""Statements declared once, compiled once per dialect, and run as steps of plans.

A `Statement` holds one SQLAlchemy Core construct (or, for the few that have no common form, one
per dialect) and compiles it the first time a backend runs it: the SQL text and what its
parameters need are then kept, so a call pays no SQLAlchemy cost, only the driver's. SQLAlchemy
only compiles here; each backend's executor (sqlite/database.py: the worker thread;
postgres/database.py: psycopg's pool) runs the text through its own driver, with named
parameters (`:name` for sqlite3, `%(name)s` for psycopg).

A store method is written once as a plan: a generator that yields `Step`s (a statement, its
parameters and the shape of the answer wanted) and gets each answer back, so the same body runs
synchronously on SQLite's worker thread and asynchronously on PostgreSQL (`run_plan` in each).

What truly differs between the dialects is named here, each a construct compiled per dialect:
the time (`NOW`), the lease clock (`LeaseEnd`, `LEASE_NOW`), a list parameter (`AnyOf`,
`NoneOf`: SQLite reads a JSON array, PostgreSQL an array), a list aggregate (`IdArray`), epoch
seconds of an instant (`EpochSeconds`), an instant compared whatever its ISO form (`After`);
and the statements with no common form (`Statement.per_dialect`).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Insert, bindparam, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.dialects.postgresql import psycopg2
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import BindParameter, ClauseElement
from sqlalchemy.sql.expression import FunctionElement
from sqlalchemy.types import Float, Integer, NullType, Text

T = TypeVar("T")

SQLITE, POSTGRESQL = "sqlite", "postgresql"
# Compiling only: neither dialect's driver module is imported.
_DIALECTS = {
    SQLITE: sqlite.dialect(paramstyle="qmark"),
    POSTGRESQL: psycopg2.dialect(paramstyle="pyformat"),
}


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement as one dialect runs it: its text (None: nothing to run there), and `bind`,
    which turns a plan's named parameters into what the driver takes: SQLite's in the text's
    order (sqlite3 binds a tuple faster than it looks names up), its lists as JSON arrays;
    PostgreSQL's by name (psycopg orders them itself). Both with the values the construct
    fixed (SQLite's OFFSET 0 after a LIMIT, say)."""

    sql: str | None
    bind: Callable[[Mapping[str, Any]], Any] = dict


class Statement:
    """One statement, compiled for a dialect on its first use (`sqlite`, `postgresql`)."""

    def __init__(self, construct: ClauseElement | str, *, keys: Sequence[str] = ()) -> None:
        self._forms = {SQLITE: construct, POSTGRESQL: construct}
        self._keys = list(keys)

    @classmethod
    def per_dialect(cls, *, sqlite: ClauseElement | str | None, postgresql: ClauseElement | str):
        """A statement with no common form; `sqlite` None: there is nothing to run."""
        statement = cls(postgresql)
        statement._forms[SQLITE] = sqlite
        return statement

    @cached_property
    def sqlite(self) -> Compiled:
        return self._compile(SQLITE)

    @cached_property
    def postgresql(self) -> Compiled:
        return self._compile(POSTGRESQL)

    def _compile(self, dialect: str) -> Compiled:
        form = self._forms[dialect]
        if form is None:
            return Compiled(None)
        construct = text(form) if isinstance(form, str) else form
        if isinstance(construct, Insert) and not construct._returning:
            construct = construct.inline()  # no new row's id returned unasked
        keys = {"column_keys": self._keys} if self._keys else {}
        compiled = construct.compile(dialect=_DIALECTS[dialect], **keys)
        binds = getattr(compiled, "bind_names", {})
        fixed = {name: bind.value for bind, name in binds.items() if not bind.required}
        if dialect == POSTGRESQL:
            return Compiled(compiled.string, (lambda p: {**fixed, **p}) if fixed else _named)
        order = _ordered(getattr(compiled, "positiontup", None) or ())
        lists = getattr(compiled, "lyra_lists", ())
        if fixed or lists:
            return Compiled(compiled.string, lambda p: order(_with(p, fixed, lists)))
        return Compiled(compiled.string, order)


def _named(params: Mapping[str, Any]) -> Mapping[str, Any]:
    return params


def _ordered(names: Sequence[str]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """The parameters by name as a tuple in `names`' order."""
    if len(names) > 1:
        return operator.itemgetter(*names)
    return lambda params: tuple(params[name] for name in names)


def _with(params: Mapping[str, Any], fixed: Mapping[str, Any], lists: Any) -> dict[str, Any]:
    return {**fixed, **params, **{name: json.dumps(params[name]) for name in lists}}


# -- plans -----------------------------------------------------------------------------------

ROWS, TUPLES, FIRST, VALUE, COUNT = "rows", "tuples", "first", "value", "count"


class Step(NamedTuple):
    """One statement of a plan: its parameters (a sequence of them when `many`) and the answer
    wanted: ROWS (read by column name), TUPLES (by position), FIRST (a row or None), VALUE (the
    first column of the first row, or None) or COUNT (rows changed)."""

    statement: Statement
    params: Any
    answer: str
    many: bool = False


Plan = Generator[Step, Any, T]


def named(statement: Statement, **params: Any) -> Step:
    """Every row, read by column name."""
    return Step(statement, params, ROWS)


def tuples(statement: Statement, **params: Any) -> Step:
    return Step(statement, params, TUPLES)


def first(statement: Statement, **params: Any) -> Step:
    return Step(statement, params, FIRST)


def value(statement: Statement, **params: Any) -> Step:
    return Step(statement, params, VALUE)


def run(statement: Statement, **params: Any) -> Step:
    return Step(statement, params, COUNT)


def run_many(statement: Statement, params: Sequence[Mapping[str, Any]]) -> Step:
    """The statement once for each parameter set (none: nothing run); the rows changed."""
    return Step(statement, params, COUNT, many=True)


class PlanRun:
    """A plan being run by a `dialect`'s executor: iterate its steps with their compiled
    statements, setting each one's `answer` before taking the next; `result` is the plan's once
    they are done. A step with nothing to run (no form in the dialect, no parameter set) is
    answered here."""

    def __init__(self, plan: Plan[Any], dialect: str) -> None:
        self._plan = plan
        self._dialect = dialect
        self.answer: Any = None
        self.result: Any = None

    def __iter__(self) -> Iterator[tuple[Compiled, Step]]:
        try:
            while True:
                step = self._plan.send(self.answer)
                compiled: Compiled = getattr(step.statement, self._dialect)
                if compiled.sql is None or (step.many and not step.params):
                    self.answer = 0 if step.many else None
                else:
                    yield compiled, step
        except StopIteration as done:
            self.result = done.value
        finally:
            self._plan.close()


# -- what differs, by name -------------------------------------------------------------------


def _differing(name: str, type_: Any, *, sqlite: str, postgresql: str, lists: bool = False):
    """A construct written `sqlite` or `postgresql` (`{}`: its arguments, in order); `lists`:
    its parameters are lists, which SQLite reads as JSON arrays."""
    construct = type(name, (FunctionElement,), {"inherit_cache": True, "type": type_})

    def form(template: str, register: bool) -> Any:
        def compile_(element: Any, compiler: Any, **kw: Any) -> str:
            if register:
                names = {arg.key for arg in element.clauses if isinstance(arg, BindParameter)}
                compiler.lyra_lists = getattr(compiler, "lyra_lists", frozenset()) | names
            return template.format(*(compiler.process(arg, **kw) for arg in element.clauses))

        return compile_

    compiles(construct, SQLITE)(form(sqlite, lists))
    compiles(construct, POSTGRESQL)(form(postgresql, False))
    return construct


# The time as every record carries it (UTC, ISO 8601, milliseconds). PostgreSQL: the server's
# clock, shared by every node (the transaction's start).
NOW = _differing(
    "Now", Text(), sqlite="strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')", postgresql="now()"
)()
# The clock batch entries' leases are kept by, now and `{}` seconds from now: SQLite, this
# machine's epoch seconds; PostgreSQL, the server's clock at the moment of the statement.
_LEASE_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
LEASE_NOW = _differing("LeaseNow", Float(), sqlite=_LEASE_NOW, postgresql="clock_timestamp()")()
_LeaseEnd = _differing(
    "LeaseEnd",
    NullType(),
    sqlite=f"{_LEASE_NOW} + {{}}",
    postgresql="clock_timestamp() + make_interval(secs => {})",
)
# An expression is one of a list parameter (NoneOf: none of them): SQLite reads the list as a
# JSON array (one statement, however long the list), PostgreSQL as an array.
_AnyOf = _differing(
    "AnyOf",
    NullType(),
    sqlite="{} IN (SELECT value FROM json_each({}))",
    postgresql="{} = ANY({})",
    lists=True,
)
_NoneOf = _differing(
    "NoneOf",
    NullType(),
    sqlite="{} NOT IN (SELECT value FROM json_each({}))",
    postgresql="{} <> ALL({})",
    lists=True,
)
# The ids of a group as one value: a JSON array (SQLite), an array (PostgreSQL); read with
# rows.decode_json.
IdArray = _differing(
    "IdArray", NullType(), sqlite="json_group_array({})", postgresql="array_agg({})"
)
# An instant as whole seconds since the epoch.
EpochSeconds = _differing(
    "EpochSeconds",
    Integer(),
    sqlite="CAST(strftime('%s', {}) AS INTEGER)",
    postgresql="floor(extract(epoch FROM {}))::bigint",
)
# An instant column is later than an instant parameter; SQLite compares the instants
# (julianday), whatever ISO 8601 form the writer used.
_After = _differing(
    "After", NullType(), sqlite="julianday({}) > julianday({})", postgresql="{} > {}"
)


def _operand(expression: Any) -> Any:
    return text(expression) if isinstance(expression, str) else expression


def AnyOf(expression: Any, name: str) -> Any:
    return _AnyOf(_operand(expression), bindparam(name))


def NoneOf(expression: Any, name: str) -> Any:
    return _NoneOf(_operand(expression), bindparam(name))


def LeaseEnd(name: str) -> Any:
    return _LeaseEnd(bindparam(name))


def After(column: str, name: str) -> Any:
    return _After(text(column), bindparam(name))
