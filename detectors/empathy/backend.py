"""Production backend: EPITOME mechanism scores from a fine-tuned transformers
``AutoModelForSequenceClassification`` in a local directory (nothing is downloaded).

The model takes (user prompt, reply) pairs. Its ``id2label`` must name the three mechanisms
(``er``/``emotional_reactions``, ``ip``/``interpretations``, ``ex``/``explorations``); each
logit goes through a sigmoid (multi-label). Long replies are split into overlapping token windows
(the tokenizer's overflow with a stride) and pooled with max, never truncated; the prompt is
context and is cut to its last ``max_length // 4`` words. Files load with ``local_files_only``
(the pipeline also sets ``HF_HUB_OFFLINE=1``); the tokenizer's vocabulary is checked against the
model's.

``runtime``: ``torch`` (default) runs the model as loaded; ``onnx-int8`` exports it once to ONNX,
quantizes the weights to int8 and runs it in ONNX Runtime (``detectors.onnx_backend``; the file is
cached under ``cache_dir``, default ``~/.cache/chatmon/onnx``), several times faster on CPU.
Compare the two with ``chatmon eval`` before switching: int8 moves scores slightly.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError

_ALIASES = {
    "er": ("er", "emotional_reactions", "emotional-reactions", "emotional reactions"),
    "ip": ("ip", "interpretations", "interpretation"),
    "ex": ("ex", "explorations", "exploration"),
}
MIN_VOCAB = 100


def mechanism_columns(id2label: dict[int, str]) -> list[int]:
    """Column index of er, ip, ex in the model output, from the config's label names."""
    names = {str(v).strip().lower(): int(k) for k, v in id2label.items()}
    cols = []
    for mech, aliases in _ALIASES.items():
        hit = next((names[a] for a in aliases if a in names), None)
        if hit is None:
            raise DetectorError(
                f"empathy model labels {sorted(names)} do not name mechanism {mech}"
            )
        cols.append(hit)
    return cols


RUNTIMES = ("torch", "onnx-int8")


class TransformersMechanisms:
    def __init__(self, model_dir: str, batch_size: int = 32, max_length: int = 256,
                 runtime: str = "torch", cache_dir: str | None = None) -> None:
        if runtime not in RUNTIMES:
            raise DetectorError(f"empathy: unknown runtime {runtime!r}; use one of {RUNTIMES}")
        self.model_dir = Path(model_dir)
        self.batch_size = batch_size
        self.max_length = max_length
        self.runtime = runtime
        self.cache_dir = cache_dir
        self._tok: Any = None
        self._model: Any = None
        self._onnx: Any = None
        self._cols: list[int] = []

    def load(self) -> None:
        if not (self.model_dir / "config.json").is_file():
            raise DetectorError(f"empathy model_dir {self.model_dir} has no config.json")
        try:
            from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:
            raise DetectorError(
                "empathy transformers backend needs: pip install 'chatmon[nlp]'"
            ) from exc
        tok = AutoTokenizer.from_pretrained(self.model_dir, local_files_only=True)
        cfg = AutoConfig.from_pretrained(self.model_dir, local_files_only=True)
        if not getattr(tok, "is_fast", False):
            raise DetectorError("empathy backend needs a fast tokenizer (tokenizer.json) to chunk")
        if len(tok) < MIN_VOCAB or len(tok) > cfg.vocab_size:
            raise DetectorError(
                f"tokenizer has {len(tok)} tokens but the model expects {cfg.vocab_size}"
            )
        self._cols = mechanism_columns(cfg.id2label)
        self._tok = tok
        if self.runtime == "onnx-int8":  # the int8 session instead of the torch weights
            from detectors.onnx_backend import OnnxSequenceClassifier

            self._onnx = OnnxSequenceClassifier(self.model_dir, cache_dir=self.cache_dir,
                                                batch_size=self.batch_size,
                                                max_length=self.max_length)
            self._onnx.load()
            return
        self._model = AutoModelForSequenceClassification.from_pretrained(
            self.model_dir, local_files_only=True
        ).eval()

    def _chunks(self, prompts: Sequence[str], replies: Sequence[str],
                tensors: str = "pt") -> Any:
        keep = max(8, self.max_length // 4)
        short = [" ".join(p.split()[-keep:]) or " " for p in prompts]
        return self._tok(
            short,
            [r or " " for r in replies],
            truncation="only_second",
            max_length=self.max_length,
            stride=self.max_length // 8,
            return_overflowing_tokens=True,
            padding=True,
            return_tensors=tensors,
        )

    def predict(self, prompts: Sequence[str], replies: Sequence[str]) -> np.ndarray:
        """(n, 3) er/ip/ex scores in [0, 1], one row per reply."""
        out = np.zeros((len(replies), 3), dtype=np.float32)
        for start in range(0, len(replies), self.batch_size):
            end = start + self.batch_size
            logits, owner = self._logits(prompts[start:end], replies[start:end])
            probs = 1.0 / (1.0 + np.exp(-logits[:, self._cols]))
            for row, i in zip(probs, owner, strict=True):
                out[start + i] = np.maximum(out[start + i], row)
        return out

    def _logits(self, prompts: Sequence[str], replies: Sequence[str]) -> tuple[Any, Any]:
        """(logits per window, the reply index of each window)."""
        if self._onnx is not None:
            enc = self._chunks(prompts, replies, "np")
            owner = enc.pop("overflow_to_sample_mapping")
            return self._onnx.logits(dict(enc)), owner
        import torch

        enc = self._chunks(prompts, replies)
        owner = enc.pop("overflow_to_sample_mapping").numpy()
        with torch.inference_mode():
            return self._model(**enc).logits.float().numpy(), owner
