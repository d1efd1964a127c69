"""The typed `retrieval:` section of engines.yaml: how `scrapy select` chooses documents.

Stages and their defaults (lyra_crawl.retrieval): facet filter, BM25 and semantic search fused
by weighted reciprocal rank fusion, a CrossEncoder, an LLM rating, the final choice. The
fusion's and the semantic model's defaults come from measurement on BEIR SciFact's train claims
(benchmarks/bench_retrieval.py), not from the design's example numbers. Facet words and their
values are data (`facets:`), checked here: a rule that cannot work is a ConfigError.

Model names are checked for their form here; whether the folder or cache entry exists is
checked when a selection loads them (lyra_crawl.retrieval.models), so a crawl never fails on a
model only `scrapy select` uses.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator

from lyra_crawl.config.errors import problem, show
from lyra_crawl.config.fields import (
    AtLeastOne,
    Key,
    Number,
    Share,
    Strings,
    Text,
    Whole,
    bounded,
    null_as,
    one_of,
)

# The semantic model that ships inside the wordllama wheel: no download, no network.
EMBEDDED_SEMANTIC_MODEL = "wordllama"
FACET_KINDS = ("year", "term", "pattern")
FACET_MATCHES = ("equals", "contains", "domain")
STEMMER_LANGUAGES = ("english", "none")
# A model given by name: a Hugging Face id (owner/name) found in the local cache.
_HUB_NAME = re.compile(r"[\w.-]+/[\w.-]+")


def _model_name(name: str) -> str:
    """`name` if it can name a model: a path (with / or ~) or a Hugging Face owner/name."""
    looks_like_path = name.startswith(("/", ".", "~")) or "/" in name
    if not looks_like_path and not _HUB_NAME.fullmatch(name):
        raise problem(
            f"is not a model lyra knows (got {show(name)}): give a local model folder "
            "(model.onnx + tokenizer.json) or a Hugging Face name owner/name already downloaded"
        )
    return name


ModelName = Annotated[Text, AfterValidator(_model_name)]


def _semantic_model(name: str) -> str:
    return name if name == EMBEDDED_SEMANTIC_MODEL else _model_name(name)


@dataclass(frozen=True)
class KeywordSearch:
    """BM25 over the chunks (bm25s): its parameters and the language of stemming and stopwords."""

    k1: Annotated[Number, bounded(lambda x: x > 0, "must be > 0")] = 1.5
    b: Share = 0.75
    stemmer: Annotated[str, one_of(STEMMER_LANGUAGES)] = "english"
    # Without a CrossEncoder: a question that no candidate shares this share of its words with
    # (and none is semantically close, `semantic.floor`) has no relevant evidence. With 0.7,
    # 99.5 % of SciFact's train claims are answered and 19 of 20 off-topic questions are not
    # (benchmarks/bench_retrieval.py).
    floor: Share = 0.7


@dataclass(frozen=True)
class SemanticSearch:
    """The embedding model and how a chunk's similarity to the question is read."""

    model: Annotated[Text, AfterValidator(_semantic_model)] = EMBEDDED_SEMANTIC_MODEL
    # A chunk's score: (1 - w) x cosine(question, chunk) + w x its best sentence's cosine. A
    # claim is usually one sentence of an abstract; measured on SciFact's train claims.
    sentence_weight: Share = 0.5
    # Without a CrossEncoder: a question whose best semantic score is below this and that no
    # candidate shares `keyword.floor` of its words with has no relevant evidence (calibrated
    # on SciFact's train claims and off-topic questions: benchmarks/bench_retrieval.py).
    floor: Annotated[Number, bounded(lambda x: -1.0 <= x <= 1.0, "must be -1..1")] = 0.35
    batch_size: AtLeastOne = 64


@dataclass(frozen=True)
class Fusion:
    """Weighted reciprocal rank fusion: score = sum of weight / (rank_constant + rank)."""

    semantic_weight: Share = 0.6
    keyword_weight: Share = 0.4
    # BM25's top ranks are sharp and the embedded model's are noisy: a small constant keeps
    # BM25's first ranks ahead, a larger one flattens the semantic list's (measured).
    semantic_rank_constant: Annotated[Whole, bounded(lambda n: n >= 0, "must be >= 0")] = 20
    keyword_rank_constant: Annotated[Whole, bounded(lambda n: n >= 0, "must be >= 0")] = 5


def _fusion_rules(fusion: Fusion) -> Fusion:
    if fusion.semantic_weight + fusion.keyword_weight <= 0:
        raise problem("semantic_weight and keyword_weight are both 0: give one a weight")
    return fusion


@dataclass(frozen=True)
class CrossEncoderStage:
    """Every fused candidate scored on (question, text); none configured = the stage skipped."""

    model: ModelName | None = None
    # Candidates scoring below it are dropped (ms-marco cross-encoders' logits).
    threshold: Number = -3.0
    weight: Share = 0.4
    max_tokens: AtLeastOne = 512


@dataclass(frozen=True)
class LlmStage:
    """An OpenAI-compatible chat endpoint (LYRA_LLM_URL) rating candidates 0-10."""

    # LYRA_LLM_MODEL overrides it; without a URL the stage is skipped.
    model: Text | None = None
    weight: Share = 0.6
    # With this many candidates or fewer, the LLM is not asked (they all go on).
    skip_at_most: Whole = 5
    keep: AtLeastOne = 5
    timeout_s: Annotated[Number, bounded(lambda x: x > 0, "must be > 0 seconds")] = 30.0


def _pattern(text: str) -> str:
    try:
        compiled = re.compile(text)
    except re.error as exc:
        raise problem(
            f"is not a valid regular expression ({exc}): fix it (got {show(text)})"
        ) from None
    if "value" not in compiled.groupindex:
        raise problem(
            f"has no (?P<value>...) group saying which words are the facet's value "
            f"(got {show(text)}): add one"
        )
    return text


@dataclass(frozen=True)
class FacetRule:
    """How one facet is named in a question and matched against a document's facet field.

    kind year: "since 2020", "after 2019", "until 2020", "before 2021", "in 2021", "2015-2019",
    "between 2015 and 2019" (the words are `since`, `after`, `until`, `before`, `exact`); term:
    each value and the phrases naming it; pattern: regular expressions whose (?P<value>...)
    group is the value.
    """

    kind: Annotated[str, one_of(FACET_KINDS)]
    # The document field it filters on; empty = the facet's own name.
    document_field: Text = ""
    match: Annotated[str, one_of(FACET_MATCHES)] = "equals"
    values: Annotated[dict[Key, Strings], null_as({})] = field(default_factory=dict)
    patterns: Annotated[tuple[Annotated[Text, AfterValidator(_pattern)], ...], null_as(())] = ()
    # Years: since/until include the year, after/before do not.
    since: Strings = ("since", "from")
    after: Strings = ("after",)
    until: Strings = ("until", "up to", "through")
    before: Strings = ("before",)
    exact: Strings = ("in", "during")


def _facet_rules(rule: FacetRule) -> FacetRule:
    if rule.kind == "term":
        if not rule.values:
            raise problem("is missing: a term facet lists its values and their phrases", "values")
        for value, phrases in rule.values.items():
            if not phrases or not all(phrase.strip() for phrase in phrases):
                raise problem("has no phrase: list the words that name it", "values", value)
    if rule.kind == "pattern" and not rule.patterns:
        raise problem(
            "is missing: a pattern facet needs regular expressions with (?P<value>...)",
            "patterns",
        )
    return rule


def _facet_names(rules: Any) -> Any:
    if isinstance(rules, dict):
        for name in rules:
            if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
                raise problem(f"facet name {show(name)} must be lower_snake_case: rename it")
    return rules


@dataclass(frozen=True)
class RetrievalPolicy:
    """engines.yaml `retrieval:`; built in code (RetrievalPolicy()), the defaults."""

    chunk_size: AtLeastOne = 600
    chunk_overlap: Annotated[Whole, bounded(lambda n: n >= 0, "must be >= 0")] = 75
    # Each retriever's depth: the fused list has at most twice this many candidates.
    initial_k: AtLeastOne = 10
    final_k: AtLeastOne = 3
    keyword: Annotated[KeywordSearch, null_as({})] = field(default_factory=KeywordSearch)
    semantic: Annotated[SemanticSearch, null_as({})] = field(default_factory=SemanticSearch)
    fusion: Annotated[Fusion, null_as({}), AfterValidator(_fusion_rules)] = field(
        default_factory=Fusion
    )
    cross_encoder: Annotated[CrossEncoderStage, null_as({})] = field(
        default_factory=CrossEncoderStage
    )
    llm: Annotated[LlmStage, null_as({})] = field(default_factory=LlmStage)
    facets: Annotated[
        Mapping[Key, Annotated[FacetRule, AfterValidator(_facet_rules)]],
        null_as({}),
        BeforeValidator(_facet_names),
    ] = field(default_factory=dict)


def _retrieval_rules(policy: RetrievalPolicy) -> RetrievalPolicy:
    if policy.chunk_overlap >= policy.chunk_size:
        raise problem(
            f"({policy.chunk_overlap}) must be below chunk_size ({policy.chunk_size})",
            "chunk_overlap",
        )
    return policy


CheckedRetrievalPolicy = Annotated[RetrievalPolicy, null_as({}), AfterValidator(_retrieval_rules)]
