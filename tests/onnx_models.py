"""Small real models the tests build here (no model hub): ONNX graphs and their tokenizers.

Each is a folder laid out as a user's exported model is (`model.onnx` + `tokenizer.json`, a
BERT-style tokenizer with [CLS]/[SEP] and token types for pairs), loaded through the same code
(lyra_crawl.retrieval.models) and run by onnxruntime:

- `cross_encoder`: one logit per (question, text) pair, `4 x (distinct words both share) - 5`:
  no shared word scores -5 (below the default threshold, -3), one scores -1, two score 3.
- `embedding_model`: each token's fixed random vector (the mean of them is the text's vector).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
OPSET = 17
# The ONNX file format version: the one onnxruntime 1.31 reads (the onnx package writes newer).
IR_VERSION = 9


def tokenizer(words: Iterable[str]) -> Tokenizer:
    vocabulary = {token: i for i, token in enumerate(SPECIALS)}
    for text in words:
        for word in re.findall(r"\w+", text.lower()):
            vocabulary.setdefault(word, len(vocabulary))
    built = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    built.normalizer = normalizers.Lowercase()
    built.pre_tokenizer = pre_tokenizers.Whitespace()
    built.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    return built


def _inputs(with_types: bool) -> list[onnx.ValueInfoProto]:
    names = ["input_ids", "attention_mask", *(["token_type_ids"] if with_types else [])]
    return [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "tokens"]) for n in names]


def _save(folder: Path, graph: onnx.GraphProto, built: Tokenizer) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION
    )
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    built.save(str(folder / "tokenizer.json"))
    return folder


def cross_encoder(folder: Path, words: Iterable[str]) -> Path:
    built = tokenizer(words)
    size = built.get_vocab_size()
    # One-hot rows; the special tokens' rows are zero, so they are never "shared words".
    one_hot = np.eye(size, dtype=np.float32)
    one_hot[: len(SPECIALS)] = 0.0
    constants = [
        numpy_helper.from_array(one_hot, "one_hot"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_tokens"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis_last"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
        numpy_helper.from_array(np.array(4.0, dtype=np.float32), "per_word"),
        numpy_helper.from_array(np.array(5.0, dtype=np.float32), "offset"),
    ]
    node = helper.make_node
    nodes = [
        node("Gather", ["one_hot", "input_ids"], ["tokens"], axis=0),
        node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        node("Cast", ["token_type_ids"], ["second"], to=TensorProto.FLOAT),
        node("Sub", ["one", "second"], ["first"]),
        node("Mul", ["mask", "first"], ["question_weight"]),
        node("Mul", ["mask", "second"], ["text_weight"]),
    ]
    for side in ("question", "text"):
        nodes += [
            node("Unsqueeze", [f"{side}_weight", "axis_last"], [f"{side}_weight3"]),
            node("Mul", ["tokens", f"{side}_weight3"], [f"{side}_tokens"]),
            node("ReduceSum", [f"{side}_tokens", "axis_tokens"], [f"{side}_bag"], keepdims=0),
            node("Clip", [f"{side}_bag", "zero", "one"], [f"{side}_has"]),
        ]
    nodes += [
        node("Mul", ["question_has", "text_has"], ["both"]),
        node("ReduceSum", ["both", "axis_tokens"], ["shared"], keepdims=1),
        node("Mul", ["shared", "per_word"], ["scaled"]),
        node("Sub", ["scaled", "offset"], ["logits"]),
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    graph = helper.make_graph(nodes, "cross_encoder", _inputs(True), [output], constants)
    return _save(folder, graph, built)


def embedding_model(folder: Path, words: Iterable[str], dimensions: int = 32) -> Path:
    built = tokenizer(words)
    vectors = (
        np.random.default_rng(7)
        .normal(size=(built.get_vocab_size(), dimensions))
        .astype(np.float32)
    )
    constants = [
        numpy_helper.from_array(vectors, "vectors"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis_last"),
    ]
    node = helper.make_node
    nodes = [
        node("Gather", ["vectors", "input_ids"], ["tokens"], axis=0),
        node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        node("Unsqueeze", ["mask", "axis_last"], ["mask3"]),
        node("Mul", ["tokens", "mask3"], ["last_hidden_state"]),
    ]
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", dimensions]
    )
    graph = helper.make_graph(nodes, "embedding", _inputs(False), [output], constants)
    return _save(folder, graph, built)
