"""Loading the models selection runs, without a network. Pure.

- The embedded semantic default, WordLlama's `l2_supercat` (256 dimensions): its weights and
  tokenizer ship inside the wordllama wheel. `WordLlama.load()` looks for the tokenizer in a
  folder the wheel does not have and would then download it, so it is loaded with the package's
  own folder as its cache and downloads disabled.
- Any other model (a stronger embedding model, a CrossEncoder) is an ONNX export in a folder:
  `model.onnx` (or `onnx/model.onnx`, as Hugging Face repositories lay it out) and
  `tokenizer.json`, run by onnxruntime with the tokenizers library (no torch). The folder is a
  local path, or a Hugging Face name (owner/name) already in the local cache (HF_HOME, else
  ~/.cache/huggingface): nothing is downloaded at run time.

A model that cannot be found or loaded is a ConfigError naming the setting and the fix.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from lyra_crawl.config import POLICY_FILE, ConfigError
from lyra_crawl.config.errors import show

WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIM = 256
ONNX_FILES = ("model.onnx", "onnx/model.onnx")
TOKENIZER_FILE = "tokenizer.json"


def model_error(setting: str, text: str) -> ConfigError:
    return ConfigError(f"{POLICY_FILE}: retrieval.{setting} {text}")


def load_wordllama() -> Any:
    """The embedded WordLlama model (wordllama.WordLlamaInference), from the wheel alone."""
    root = logging.getLogger()
    # wordllama.inference calls logging.basicConfig() on import, which would give a program
    # without logging set up a second, INFO-level handler; a handler in place makes it a no-op.
    guard = logging.NullHandler()
    unguarded = not root.handlers
    if unguarded:
        root.addHandler(guard)
    try:
        import wordllama
        from wordllama import WordLlama
    finally:
        if unguarded:
            root.removeHandler(guard)
    folder = Path(wordllama.__file__).parent
    try:
        return WordLlama.load(
            WORDLLAMA_CONFIG, cache_dir=folder, dim=WORDLLAMA_DIM, disable_download=True
        )
    except FileNotFoundError as exc:
        raise model_error(
            "semantic.model", f"'wordllama': the wheel's files are missing ({exc}): reinstall it"
        ) from None


def model_folder(name: str, setting: str) -> Path:
    """The folder of model `name`: a local path, or a Hugging Face name in the local cache."""
    path = Path(name).expanduser()
    if path.exists() or name.startswith(("/", ".", "~")):
        if not path.is_dir():
            raise model_error(
                setting,
                f"folder {show(str(path))} does not exist: give the folder holding the model's "
                f"{ONNX_FILES[0]} and {TOKENIZER_FILE}",
            )
        return path
    cached = _hub_cache() / f"models--{name.replace('/', '--')}" / "snapshots"
    snapshots = sorted(cached.iterdir(), key=lambda p: p.stat().st_mtime) if cached.is_dir() else []
    if not snapshots:
        raise model_error(
            setting,
            f"{show(name)} is neither a local folder nor in the Hugging Face cache ({cached.parent}"
            "): download it once (huggingface-cli download NAME) or give the folder's path",
        )
    return snapshots[-1]


def _hub_cache() -> Path:
    hub = os.environ.get("HF_HUB_CACHE")
    if hub:
        return Path(hub)
    home = os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface"
    return Path(home) / "hub"


@dataclass
class OnnxTextModel:
    """An ONNX transformer and its tokenizer, fed token ids, attention mask (and token types)."""

    folder: Path
    setting: str
    max_tokens: int

    @classmethod
    def load(cls, name: str, setting: str, max_tokens: int) -> OnnxTextModel:
        model = cls(model_folder(name, setting), setting, max_tokens)
        model.inference  # noqa: B018 - load now, so a broken model fails before any question
        return model

    @cached_property
    def tokenizer(self) -> Tokenizer:
        path = self.folder / TOKENIZER_FILE
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises its own Exception for any bad file
            raise model_error(
                self.setting,
                f"cannot read {path} ({_first_line(exc)}): export the model's tokenizer.json",
            ) from None
        tokenizer.enable_truncation(self.max_tokens)
        tokenizer.enable_padding()
        return tokenizer

    @cached_property
    def inference(self) -> Any:
        import onnxruntime

        found = [self.folder / name for name in ONNX_FILES if (self.folder / name).is_file()]
        if not found:
            raise model_error(
                self.setting,
                f"{self.folder} has no {' or '.join(ONNX_FILES)}: export the model to ONNX "
                "(optimum-cli export onnx --model NAME FOLDER)",
            )
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # its warnings about unused initializers are noise
        try:
            return onnxruntime.InferenceSession(
                str(found[0]), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            raise model_error(
                self.setting,
                f"cannot load {found[0]} ({_first_line(exc)}): check it is an ONNX model that "
                f"onnxruntime {onnxruntime.__version__} reads",
            ) from None

    @property
    def version(self) -> str:
        """The model file's size and time: what changes when the model is replaced."""
        path = next(self.folder / n for n in ONNX_FILES if (self.folder / n).is_file())
        stat = path.stat()
        return f"{path.name}:{stat.st_size}:{int(stat.st_mtime)}"

    def run(self, inputs: list[str] | list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """The model's first output for `inputs` (texts or pairs), and the attention mask."""
        encodings = self.tokenizer.encode_batch(inputs)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in {i.name for i in self.inference.get_inputs()}:
            feed["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        return self.inference.run(None, feed)[0], mask


def _first_line(exc: Exception) -> str:
    """The first line of a library's error, cut to a readable length."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
