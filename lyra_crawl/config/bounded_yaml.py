"""The YAML files lyra reads (batch files, search_parsers.yaml, engines.yaml), read within
bounds. Pure.

PyYAML's safe loader builds nothing but plain data, yet it bounds nothing: eight lines of nested
aliases (`b: &b [*a, *a, …]`) stand for billions of values as soon as anything walks them (a
message quoting one, a validation), a deep nesting recurses, a repeated key silently wins. Here a
file is refused, with one line (YamlRefused), when it is larger than its limit, nests deeper than
MAX_DEPTH, holds more values than its limit (an alias counted as the values it stands for), when
its aliases stand for more than MAX_ALIAS_VALUES values in all, or one refers to a value holding
it, or when a mapping gives a key twice.

The top level is built a part at a time: each value of a top-level mapping, each item of a list
there, with the parse tree of each part let go before the next. A batch file of 50,000 entries
holds its entries, not the half a million parse nodes they were read from (a node with its
marks weighs ~500 bytes).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    Event,
    MappingEndEvent,
    MappingStartEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.reader import ReaderError

from lyra_crawl.quoting import QUOTE_CHARS, show

# Deeper than any config or batch file needs (search_parsers.yaml: 7 levels).
MAX_DEPTH = 20
# Values aliases may stand for in one file: anchors reused a few times, never a bomb.
MAX_ALIAS_VALUES = 10_000
_MERGE_TAG = "tag:yaml.org,2002:merge"
# libyaml's parser when PyYAML has it (the same events, ten times faster), else PyYAML's own.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlRefused(ValueError):
    """A YAML file is not read; the message (one line) says why and the fix, without the
    file's name, which the caller puts first."""


@dataclass(frozen=True)
class YamlLimits:
    """How much of one kind of file is read before it is refused."""

    max_bytes: int
    # Values in all (scalars, lists, mappings), an alias counted as the values it stands for.
    max_values: int
    # Values of one part: a top-level value, or an item of a top-level list; `part` names it.
    max_part_values: int
    part: str
    # Items of a top-level list (entries of a batch file).
    max_list_items: int
    # What to do with a file over these limits.
    fix: str


def read_text(path: str | Path, limits: YamlLimits) -> str:
    """The file's text; YamlRefused when it is larger than its limit or not UTF-8 (OSError
    when it cannot be read at all). No more than the limit is read."""
    with open(path, "rb") as file:
        data = file.read(limits.max_bytes + 1)
    _check_size(len(data), limits)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlRefused(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start:,}): "
            "save it as UTF-8"
        ) from None


def load_yaml(text: str, limits: YamlLimits) -> Any:
    """The one document of `text` as plain data (None when empty), within `limits`."""
    _check_size(len(text) if text.isascii() else len(text.encode("utf-8", "replace")), limits)
    loader = _BoundedLoader(text, limits)
    try:
        return loader.document()
    except YamlRefused:
        raise
    except ConstructorError as exc:
        raise YamlRefused(
            _at(exc.problem_mark, f"cannot be read ({_problem(exc)}): fix it")
        ) from None
    except yaml.MarkedYAMLError as exc:
        raise YamlRefused(
            _at(exc.problem_mark, f"is not valid YAML ({_problem(exc)}): fix the syntax")
        ) from None
    except ReaderError as exc:
        raise YamlRefused(
            f"holds a character YAML does not allow (#x{exc.character:04x}, character "
            f"{exc.position + 1:,}): remove it"
        ) from None
    except ValueError as exc:
        # A scalar its type cannot hold: an integer past Python's digit limit, 2024-13-45.
        reason = _short(str(exc).split(";")[0])
        raise YamlRefused(f"holds a value that cannot be read ({reason}): fix it") from None
    finally:
        loader.dispose()


def _check_size(size: int, limits: YamlLimits) -> None:
    if size > limits.max_bytes:
        raise YamlRefused(
            f"is larger than {limits.max_bytes:,} bytes, the most such a file may be: {limits.fix}"
        )


def _problem(error: yaml.MarkedYAMLError) -> str:
    problem = _short(error.problem or "")
    return f"{_short(error.context)}, {problem}" if error.context else problem


def _short(text: str) -> str:
    """PyYAML's words as they are, unless they quote something long or on several lines."""
    return text if len(text) <= QUOTE_CHARS and text.isprintable() else show(text)


def _given_twice(key: Any, mark: Any) -> YamlRefused:
    return YamlRefused(_at(mark, f"key {show(key)} is given twice: keep one"))


def _at(mark: Any, problem: str) -> str:
    return problem if mark is None else f"line {mark.line + 1}: {problem}"


class _BoundedComposer(Composer):
    """PyYAML's composer, counting what it composes and refusing past the limits."""

    def bound(self, limits: YamlLimits) -> None:
        self.limits = limits
        self.depth = 0
        self.values = 0
        self.part_values = 0
        self.alias_values = 0
        # What each anchored node stands for, in values; absent while it is being composed.
        self.stands_for: dict[Node, int] = {}

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            self._alias(event)
            return super().compose_node(parent, index)
        self.enter(event)
        before = self.values
        node = super().compose_node(parent, index)
        self.depth -= 1
        if event.anchor is not None:
            self.stands_for[node] = self.values - before
        return node

    def compose_mapping_node(self, anchor: str | None) -> MappingNode:
        node = super().compose_mapping_node(anchor)
        seen: set[tuple[str, str]] = set()
        for key, _ in node.value:
            if isinstance(key, ScalarNode) and key.tag != _MERGE_TAG:
                if (key.tag, key.value) in seen:
                    raise _given_twice(key.value, key.start_mark)
                seen.add((key.tag, key.value))
        return node

    def enter(self, event: Event) -> None:
        """One value more, one level deeper."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise YamlRefused(
                _at(event.start_mark, f"is nested more than {MAX_DEPTH} levels deep: flatten it")
            )
        self.count(1, event)

    def count(self, values: int, event: Event) -> None:
        self.values += values
        self.part_values += values
        limits = self.limits
        if self.values > limits.max_values:
            raise YamlRefused(
                _at(event.start_mark, f"holds more than {limits.max_values:,} values: {limits.fix}")
            )
        if self.part_values > limits.max_part_values:
            raise YamlRefused(
                _at(
                    event.start_mark,
                    f"{limits.part} holds more than {limits.max_part_values:,} values"
                    f"{', counting what its aliases stand for' if self.alias_values else ''}: "
                    "nothing here needs that many",
                )
            )

    def _alias(self, event: AliasEvent) -> None:
        node = self.anchors.get(event.anchor)
        if node is None:
            return  # the composer says it is undefined
        values = self.stands_for.get(node)
        if values is None:
            raise YamlRefused(
                _at(
                    event.start_mark,
                    f"alias *{_short(event.anchor)} refers to a value that holds it: "
                    "write the value out",
                )
            )
        self.alias_values += values
        if self.alias_values > MAX_ALIAS_VALUES:
            raise YamlRefused(
                _at(
                    event.start_mark,
                    f"its aliases (*name) stand for more than {MAX_ALIAS_VALUES:,} values: "
                    "write the values out instead",
                )
            )
        self.count(values, event)


class _BoundedLoader(_BoundedComposer, _SAFE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, its composer bounded, its document built a part at a time."""

    def __init__(self, text: str, limits: YamlLimits) -> None:
        _SAFE_LOADER.__init__(self, text)
        self.anchors: dict[str, Node] = {}
        self.bound(limits)

    def document(self) -> Any:
        self.get_event()  # the stream's start
        if self.check_event(StreamEndEvent):
            return None
        self.get_event()  # the document's start
        data = self._top_level()
        self.get_event()  # the document's end
        if not self.check_event(StreamEndEvent):
            raise YamlRefused(
                _at(self.peek_event().start_mark, "holds more than one document: keep one")
            )
        return data

    def _top_level(self) -> Any:
        if not self._unadorned(MappingStartEvent):
            return self._list_or_part()
        self.enter(self.get_event())
        data: dict[Any, Any] = {}
        while not self.check_event(MappingEndEvent):
            event = self.peek_event()
            key = self._part()
            if not isinstance(key, Hashable):
                raise YamlRefused(_at(event.start_mark, "a top-level key must be a plain word"))
            if key in data:
                raise YamlRefused(
                    _at(event.start_mark, f"key {show(key)} is given twice: keep one")
                )
            data[key] = self._list_or_part()
        self.get_event()
        self.depth -= 1
        return data

    def _list_or_part(self) -> Any:
        if not self._unadorned(SequenceStartEvent):
            return self._part()
        start = self.get_event()
        self.enter(start)
        items = []
        while not self.check_event(SequenceEndEvent):
            if len(items) == self.limits.max_list_items:
                raise YamlRefused(
                    _at(
                        self.peek_event().start_mark,
                        f"a list holds more than {self.limits.max_list_items:,} items: "
                        f"{self.limits.fix}",
                    )
                )
            items.append(self._part())
        self.get_event()
        self.depth -= 1
        return items

    def _unadorned(self, kind: type[CollectionStartEvent]) -> bool:
        """Whether the next event starts a `kind` collection without anchor or tag, which can
        be built a part at a time (an anchored or tagged one is built whole)."""
        event = self.peek_event()
        return isinstance(event, kind) and event.anchor is None and event.implicit

    def _part(self) -> Any:
        self.part_values = 0
        return self.construct_document(self.compose_node(None, None))
