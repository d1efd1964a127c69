"""The CrossEncoder stage: every candidate scored on (question, text) by a real model. Pure.

The model is an ONNX export of a cross-encoder (e.g. cross-encoder/ms-marco-MiniLM-L-6-v2) in a
folder or the local Hugging Face cache (lyra_crawl.retrieval.models), run with onnxruntime; its
one output per pair is the relevance logit the threshold is set in. Without a model configured
the stage is skipped and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lyra_crawl.config import CrossEncoderStage
from lyra_crawl.retrieval.models import OnnxTextModel, model_error

BATCH = 16


class CrossEncoder:
    def __init__(self, settings: CrossEncoderStage) -> None:
        assert settings.model is not None
        self.name = settings.model
        self._model = OnnxTextModel.load(settings.model, "cross_encoder.model", settings.max_tokens)
        self.version = self._model.version

    def score(self, question: str, texts: Sequence[str]) -> np.ndarray:
        """One relevance score per text (the model's logit)."""
        scores = []
        for start in range(0, len(texts), BATCH):
            pairs = [(question, text) for text in texts[start : start + BATCH]]
            logits, _ = self._model.run(pairs)
            if logits.ndim == 2 and logits.shape[1] == 1:
                logits = logits[:, 0]
            if logits.ndim != 1:
                raise model_error(
                    "cross_encoder.model",
                    f"{self.name}: gives {logits.shape[1:]} values per pair, not one relevance "
                    "score: export a cross-encoder with a single output",
                )
            scores.append(logits.astype(np.float32))
        return np.concatenate(scores) if scores else np.zeros(0, dtype=np.float32)
