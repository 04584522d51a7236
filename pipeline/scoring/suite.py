"""Calling detectors: shared features once per batch, each detector on the turns of its roles,
shape checks, and per-detector failure isolation. Used by the embedded runner, the faust agents
and ``chatmon eval`` alike."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from detectors import registry
from detectors.base import Context, Detector, Finding, ScoringInput, speaks
from detectors.features import (
    BACKENDS,
    EMBEDDING,
    PROMPT_EMBEDDING,
    SENTENCE_EMBEDDINGS,
    SENTENCES,
    TOKEN_STATES,
    SentenceEncoder,
    split_sentences,
)
from detectors.features import shared_encoder as features_shared_encoder
from pipeline.errors import DetectorShapeError

log = logging.getLogger(__name__)


@dataclass
class DetectorFailure:
    detector: str
    error: str
    keys: list[tuple[str, int]]


@dataclass
class SuiteResult:
    findings: list[list[Finding]]
    failures: list[DetectorFailure] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    # Turns of a detector's roles it was not given because it does not read their language.
    language_skipped: dict[str, int] = field(default_factory=dict)


class FeatureExtractor:
    """Computes the shared features the loaded detectors asked for, once per batch, and only
    for the turns some detector needing them scores: one of its roles (a detector may narrow
    the roles it needs features for with ``feature_roles``) and one of its languages."""

    def __init__(self, detectors: Sequence[Detector], encoder: SentenceEncoder | None = None,
                 encoder_backend: str | None = None) -> None:
        # (roles, feature names, detector) per detector that needs any feature
        self.needs = [
            (frozenset(getattr(d, "feature_roles", d.roles)), names, d)
            for d in detectors if (names := frozenset(getattr(d, "features", frozenset())))
        ]
        vector_features = {EMBEDDING, SENTENCE_EMBEDDINGS, PROMPT_EMBEDDING, TOKEN_STATES}
        needs_vectors = any(names & vector_features for _, names, _ in self.needs)
        self.encoder = (encoder or shared_encoder(encoder_backend)) if needs_vectors else None

    def load(self) -> None:
        if self.encoder is not None:
            self.encoder.load()

    def _wanted(self, item: ScoringInput) -> frozenset[str]:
        out: frozenset[str] = frozenset()
        for roles, names, det in self.needs:
            if item.turn.role in roles and speaks(det, item.turn.lang):
                out |= names
        return out

    def add(self, batch: Sequence[ScoringInput]) -> list[ScoringInput]:
        if not self.needs:
            return list(batch)
        wanted = [self._wanted(item) for item in batch]
        feats: list[dict[str, Any]] = [dict(item.context.features) for item in batch]
        spans = [split_sentences(item.turn.text) if w else ()
                 for item, w in zip(batch, wanted, strict=True)]
        texts: list[str] = []
        for item, w, sp in zip(batch, wanted, spans, strict=True):
            if EMBEDDING in w:
                texts.append(item.turn.text)
            if SENTENCE_EMBEDDINGS in w:
                texts += [item.turn.text[s:e] for s, e in sp]
            if PROMPT_EMBEDDING in w and item.context.prompt_text:
                texts.append(item.context.prompt_text)
        # Token states only from the int8 ONNX encoder: the PII head reads those wherever it
        # runs (with another backend it computes its own, the same bits, on the ONNX encoder).
        onnx = self.encoder is not None and self.encoder.backend == "onnx-int8"
        state_texts = [item.turn.text for item, w in zip(batch, wanted, strict=True)
                       if onnx and TOKEN_STATES in w]
        encoded: Any = []
        states: list[Any] = []
        if self.encoder is not None and (texts or state_texts):
            encoded, states = self.encoder.encode_with_states(texts, state_texts, ahead=True)
        vectors, token_states = iter(encoded), iter(states)
        for item, w, sp, f in zip(batch, wanted, spans, feats, strict=True):
            if onnx and TOKEN_STATES in w:
                f[TOKEN_STATES] = next(token_states)
            if SENTENCES in w:
                f[SENTENCES] = sp
            if EMBEDDING in w:
                f[EMBEDDING] = next(vectors)
            if SENTENCE_EMBEDDINGS in w:
                rows = [next(vectors) for _ in sp]
                f[SENTENCE_EMBEDDINGS] = (
                    np.stack(rows) if rows else np.zeros((0, SentenceEncoder.dim), np.float32)
                )
            if PROMPT_EMBEDDING in w:
                f[PROMPT_EMBEDDING] = next(vectors) if item.context.prompt_text else None
        return [
            replace(item, context=replace(item.context, features=f))
            for item, f in zip(batch, feats, strict=True)
        ]


    def ahead(self, turns: Callable[[], Sequence[tuple[str, str]]]) -> None:
        """Start the encoder on the next batch while this one is scored (``SentenceEncoder.
        ahead``, int8 ONNX only: torch uses every core itself). ``turns()``, run on the
        encoder's ahead thread, gives the next batch's (role, text) pairs; each gets what the
        detectors of its role want (its language is not known yet: all of it)."""
        if self.encoder is None or self.encoder.backend != "onnx-int8":
            return

        def make() -> tuple[list[str], list[str]]:
            texts: list[str] = []
            state_texts: list[str] = []
            for role, text in turns():
                wants = frozenset().union(*(names for roles, names, _ in self.needs
                                            if role in roles))
                if TOKEN_STATES in wants:
                    state_texts.append(text)
                if EMBEDDING in wants:
                    texts.append(text)
                if SENTENCE_EMBEDDINGS in wants:
                    texts += [text[s:e] for s, e in split_sentences(text)]
            return texts, state_texts

        self.encoder.ahead(make)


# One loaded encoder per backend and process: several suites (the Kafka stages, evals) share it.
_default_backend = "torch"


def set_default_encoder_backend(backend: str) -> None:
    """The backend of suites built without one (``chatmon eval`` sets it from Settings)."""
    global _default_backend
    if backend not in BACKENDS:
        raise ValueError(f"unknown encoder backend {backend!r}; choose one of {BACKENDS}")
    _default_backend = backend


def shared_encoder(backend: str | None = None) -> SentenceEncoder:
    return features_shared_encoder(backend or _default_backend)


class DetectorSuite:
    """The loaded detectors of one worker. ``load()`` once; ``score()`` per batch."""

    def __init__(self, detectors: Sequence[Detector], encoder: SentenceEncoder | None = None,
                 encoder_backend: str | None = None):
        self.detectors = list(detectors)
        self.features = FeatureExtractor(self.detectors, encoder, encoder_backend)
        self._loaded = False
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def from_names(
        cls, names: Sequence[str], options: Mapping[str, Mapping[str, Any]] | None = None,
        encoder_backend: str | None = None,
    ) -> DetectorSuite:
        options = options or {}
        return cls([registry.create(n, options.get(n, {})) for n in names],
                   encoder_backend=encoder_backend)

    @property
    def versions(self) -> dict[str, str]:
        return {d.name: d.version for d in self.detectors}

    def load(self) -> None:
        if self._loaded:
            return
        self.features.load()
        for d in self.detectors:
            d.load()
        self._loaded = True
        settle_process()

    def score(self, batch: Sequence[ScoringInput],
              ahead: Callable[[], Sequence[tuple[str, str]]] | None = None) -> SuiteResult:
        """Findings per turn of ``batch``. ``ahead``: the next batch's (role, text) pairs, known
        already (a file being read): the encoder starts on them once this batch's features are
        done, on the core the detectors leave (``FeatureExtractor.ahead``)."""
        self.load()
        result = SuiteResult(findings=[[] for _ in batch])
        plain = [k for k, d in enumerate(self.detectors) if not getattr(d, "features", None)]
        outs: dict[int, _Outcome] = {}
        if plain and self.features.encoder is not None:
            # Detectors that need no shared features (Presidio + spaCy) run on a second thread
            # while the encoder and the other detectors run: ONNX Runtime, torch and spaCy's
            # matrix products release the GIL, so both cores work. Findings are merged in
            # detector order below, so the output is the same.
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="chatmon-plain")
            future = self._pool.submit(
                lambda: {k: _score_one(self.detectors[k], batch) for k in plain})
            try:
                featured = self.features.add(batch)
                if ahead is not None:
                    self.features.ahead(ahead)
                outs.update(self._score_featured(featured, plain))
            finally:
                outs.update(future.result())
        else:
            featured = self.features.add(batch)
            if ahead is not None:
                self.features.ahead(ahead)
            outs.update(self._score_featured(featured, []))
        for k, det in enumerate(self.detectors):
            idx, out, failed, seconds, skipped = outs[k]
            if skipped:
                result.language_skipped[det.name] = skipped
            if not idx:
                continue
            result.seconds[det.name] = result.seconds.get(det.name, 0.0) + seconds
            result.failures += [DetectorFailure(det.name, error, [batch[i].turn.key])
                                for i, error in failed]
            for i, found in zip(idx, out, strict=True):
                result.findings[i].extend(found)
        return result


    def _score_featured(self, featured: list[ScoringInput], done: Sequence[int]
                        ) -> dict[int, _Outcome]:
        """The detectors not in ``done``; those that say ``runs_apart`` (the PII detector,
        whose analyser waits on a child process) on the second thread meanwhile."""
        todo = [k for k in range(len(self.detectors)) if k not in done]
        apart = [k for k in todo if getattr(self.detectors[k], "runs_apart", False)]
        if not apart or len(apart) == len(todo):
            return {k: _score_one(self.detectors[k], featured) for k in todo}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="chatmon-plain")
        future = self._pool.submit(
            lambda: {k: _score_one(self.detectors[k], featured) for k in apart})
        try:
            outs = {k: _score_one(self.detectors[k], featured) for k in todo if k not in apart}
        finally:
            outs.update(future.result())
        return outs


# (indexes scored, their findings, (index, error) of the turns it failed on, seconds, turns
# skipped for language)
_Outcome = tuple[list[int], list[list[Finding]], list[tuple[int, str]], float, int]


def _score_one(det: Detector, batch: Sequence[ScoringInput]) -> _Outcome:
    """One detector on the turns of its roles and languages, with shape check and failure
    isolation: when the batch fails, each of its turns is scored alone, so only the turns the
    detector still fails on lose its findings."""
    mine = [i for i, item in enumerate(batch) if item.turn.role in det.roles]
    idx = [i for i in mine if speaks(det, batch[i].turn.lang)]
    skipped = len(mine) - len(idx)
    if not idx:
        return idx, [], [], 0.0, skipped
    t0 = time.perf_counter()
    try:
        out = _checked(det, [batch[i] for i in idx])
    except Exception as exc:  # isolate: this detector's other turns and the others go on
        log.warning("detector %s failed on a batch of %d: %s", det.name, len(idx),
                    type(exc).__name__)
        out, failed = _one_by_one(det, batch, idx) if len(idx) > 1 else (
            [[]], [(idx[0], _error_text(det, exc))])
        return idx, out, failed, time.perf_counter() - t0, skipped
    return idx, out, [], time.perf_counter() - t0, skipped


def _one_by_one(det: Detector, batch: Sequence[ScoringInput],
                idx: Sequence[int]) -> tuple[list[list[Finding]], list[tuple[int, str]]]:
    out: list[list[Finding]] = []
    failed: list[tuple[int, str]] = []
    for i in idx:
        try:
            out += _checked(det, [batch[i]])
        except Exception as exc:
            out.append([])
            failed.append((i, _error_text(det, exc)))
    log.warning("detector %s: %d of %d turns still fail alone", det.name, len(failed), len(idx))
    return out, failed


def _checked(det: Detector, sub: Sequence[ScoringInput]) -> list[list[Finding]]:
    out = det.score(sub)
    if not isinstance(out, list) or len(out) != len(sub):
        got = len(out) if isinstance(out, list) else type(out).__name__
        raise DetectorShapeError(f"detector {det.name} returned {got} results for {len(sub)} turns")
    return out


def _error_text(det: Detector, exc: Exception) -> str:
    """What a dead letter says about a detector failure: the exception's type, never its
    message (messages can quote the text being scored)."""
    return f"detector {det.name} raised {type(exc).__name__} on this turn"


def score_texts(
    detector: Detector, items: Sequence[ScoringInput], batch_size: int = 64
) -> list[list[Finding]]:
    """Score items through one detector as the pipeline would; raises on detector failure."""
    suite = DetectorSuite([detector])
    out: list[list[Finding]] = []
    for i in range(0, len(items), batch_size):
        res = suite.score(items[i : i + batch_size])
        if res.failures:
            raise RuntimeError(res.failures[0].error)
        out.extend(res.findings)
    return out


def simple_input(text: str, role: str = "assistant", prompt: str = "", **turn: Any) -> ScoringInput:
    """A ScoringInput for evals and tests: one turn, optionally answering one user prompt."""
    from datetime import UTC, datetime

    from detectors.base import Turn

    base = dict(conversation_id=turn.pop("conversation_id", "c"),
                ts=datetime(2026, 1, 1, tzinfo=UTC))
    history = (Turn(turn=0, role="user", text=prompt, **base),) if prompt else ()
    t = Turn(turn=len(history), role=role, text=text, **base, **turn)  # type: ignore[arg-type]
    return ScoringInput(t, Context(history=history))


def settle_process() -> None:
    """Process-wide settings for scoring, applied once the models are loaded.

    - numpy/scipy BLAS on one thread: the detectors' matrices are small, and the cores are
      already busy with ONNX Runtime and the second scoring thread; OpenBLAS's spinning worker
      threads otherwise steal them (measured: 255 -> 466 turns/s, p99 233 -> 104 ms).
    - The loaded models are hundreds of thousands of long-lived objects; left in the
      collector's oldest generation, every full collection walks them all (pauses of
      0.1-0.4 s mid-batch, the pipeline's p99). Frozen, they are never scanned again.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
    gc.collect()
    gc.freeze()
