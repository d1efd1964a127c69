"""Hostile config: whatever is in the YAML, the answer is a ConfigError or a valid config.

Never a traceback, never code execution: safe loading only.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lyra_crawl.config import ConfigError, LyraConfig, parse_config

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
PARSERS = (CONFIG_DIR / "search_parsers.yaml").read_text()
POLICY = (CONFIG_DIR / "engines.yaml").read_text()
PARSERS_DOC = yaml.safe_load(PARSERS)
POLICY_DOC = yaml.safe_load(POLICY)

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


def paths(node, prefix=()):
    """Every key path into a parsed YAML document."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*prefix, index)
            yield from paths(value, (*prefix, index))


PARSER_PATHS = list(paths(PARSERS_DOC))
POLICY_PATHS = list(paths(POLICY_DOC))
# Every field any engine uses, on one engine: the fuzz reaches each of them on every run.
FIELD_PATHS = sorted(
    {("engines", "mojeek", path[2]) for path in PARSER_PATHS if len(path) == 3},
)


def mutate(doc, path, action, value):
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete":
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@pytest.mark.parametrize("path", FIELD_PATHS, ids=lambda p: p[-1])
@pytest.mark.parametrize(
    "value", [None, 5, -1, True, 2.5, "", "x" * 300, [1, [2]], {"a": [1]}, ["a", None]]
)
def test_every_engine_field_with_every_wrong_type(path, value):
    outcome(yaml.safe_dump(mutate(PARSERS_DOC, path, "replace", value)), POLICY)
    outcome(yaml.safe_dump(mutate(PARSERS_DOC, path, "delete", None)), POLICY)


@pytest.mark.parametrize(
    "key", ["enabled", "weight", "qps", "daily_limit", "lastmile", "pagination_enabled"]
)
@pytest.mark.parametrize("value", [None, 5, -1, True, 2.5, "", [1], {"a": 1}])
def test_every_policy_field_with_every_wrong_type(key, value):
    outcome(
        PARSERS, yaml.safe_dump(mutate(POLICY_DOC, ("engines", "mojeek", key), "replace", value))
    )


@pytest.mark.parametrize("name", ["\n", "mo\njeek", "tab\there"])
def test_an_engine_name_with_a_control_character_is_named_on_one_line(name):
    engines = {name: {"enabled": True}}

    error = outcome(PARSERS, yaml.safe_dump({**POLICY_DOC, "engines": engines}))

    assert isinstance(error, ConfigError)
    assert f"engine {name!r}" in str(error) and "is not described" in str(error)


def outcome(parsers: str, policy: str) -> LyraConfig | ConfigError:
    try:
        return parse_config(parsers, policy)
    except ConfigError as error:
        assert str(error).strip() and "\n" not in str(error)
        return error


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(["parsers", "policy"]),
    index=st.integers(min_value=0),
    action=st.sampled_from(["delete", "replace"]),
    value=junk,
)
def test_mutated_config_is_accepted_or_rejected_clearly(which, index, action, value):
    doc, all_paths = (
        (PARSERS_DOC, PARSER_PATHS) if which == "parsers" else (POLICY_DOC, POLICY_PATHS)
    )
    mutated = yaml.safe_dump(mutate(doc, all_paths[index % len(all_paths)], action, value))
    if which == "parsers":
        outcome(mutated, POLICY)
    else:
        outcome(PARSERS, mutated)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_random_text_is_accepted_or_rejected_clearly(text):
    outcome(text, POLICY)
    outcome(PARSERS, text)


BILLION_LAUGHS = """
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
"""


@pytest.mark.parametrize(
    "text",
    [
        "!!python/object/apply:os.system ['touch /tmp/lyra-pwned']",
        "engines: !!python/object/new:subprocess.Popen [['touch', '/tmp/lyra-pwned']]",
        BILLION_LAUGHS + "engines: {mojeek: {url: *h}}",
        BILLION_LAUGHS + "engines: {mojeek: {url: 'https://x.org/', params: {q: *h}}}",
        BILLION_LAUGHS + "engines: {mojeek: *h}",
        "engines:\n" + "  - " * 1 + "[" * 5000 + "]" * 5000,
        "engines: {" + ", ".join(f"e{i}: {{}}" for i in range(20000)) + "}",
        "x: " + "y" * 1_200_000,
    ],
)
def test_hostile_yaml_never_executes_or_explodes(text):
    result = outcome(text, POLICY)
    assert isinstance(result, ConfigError)
    assert not Path("/tmp/lyra-pwned").exists()
