"""EmpathyDetector: EPITOME mechanisms, overall empathy, emotion alignment, engagement with the
user's situation, tactics, and the empathy failures for every assistant turn.

Findings per assistant turn. Scores (measurements, never flagged by the shipped policy):
``empathy.score``, ``empathy.er``, ``empathy.ip``, ``empathy.ex`` and ``empathy.alignment``
always, ``empathy.cause_addressed`` when an empathic sentence engages the user's situation
(score = its engagement, at least ``ENGAGED``; evidence: the cause span in the user turn and the
addressing sentence). Failures (flagged by
policy): ``empathy.missed`` (the user was upset and the reply did not engage with it),
``empathy.advice_before_ack``, ``empathy.formulaic_restatement``, ``empathy.overempathising``,
``empathy.length_inflated``, stored only when their score reaches ``MIN_FLAG_SCORE`` (a
negligible score is dropped to keep the store small; policy decides what is flagged).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from detectors.base import DetectorError, Finding, ScoringInput
from detectors.empathy.analysis import ENGAGED, analyse
from detectors.empathy.emotion import EmotionModel
from detectors.empathy.evidence import TurnAnalysis
from detectors.empathy.flags import FLAGS
from detectors.empathy.model import MECHANISMS, EmpathyModel
from detectors.features import EMBEDDING, PROMPT_EMBEDDING, SENTENCE_EMBEDDINGS, SENTENCES

MIN_FLAG_SCORE = 0.05
BACKENDS = ("offline", "transformers")


class EmpathyDetector:
    name = "empathy"
    roles = frozenset({"assistant"})
    languages = frozenset({"en"})  # English patterns, lexicons and training sentences
    features = frozenset({SENTENCES, SENTENCE_EMBEDDINGS, EMBEDDING, PROMPT_EMBEDDING})

    def __init__(
        self,
        backend: str = "offline",
        model_dir: str | None = None,
        weights: str | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        runtime: str = "torch",
    ) -> None:
        if backend not in BACKENDS:
            raise DetectorError(f"empathy: unknown backend {backend!r}; use one of {BACKENDS}")
        if backend == "transformers" and not model_dir:
            raise DetectorError("empathy: backend='transformers' needs model_dir (a local folder)")
        self.backend = backend
        self._model_dir = model_dir
        self._weights = weights
        self._batch_size = batch_size
        self._max_length = max_length
        self._runtime = runtime
        self._model: EmpathyModel | None = None
        self._emotions: EmotionModel | None = None
        self._transformer: Any = None
        self.version = "2.3.0" + ("" if backend == "offline" else "+transformers") + (
            "+int8" if backend == "transformers" and runtime == "onnx-int8" else "")

    def load(self) -> None:
        if self._model is None:
            self._model = EmpathyModel.load(self._weights) if self._weights else EmpathyModel.load()
        if self._emotions is None:
            self._emotions = EmotionModel.load()
        if self.backend == "transformers" and self._transformer is None:
            from detectors.empathy.backend import TransformersMechanisms

            self._transformer = TransformersMechanisms(
                self._model_dir or "", self._batch_size, self._max_length, self._runtime
            )
            self._transformer.load()

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        self.load()
        model, emotions = self._model, self._emotions
        if model is None or emotions is None:
            raise DetectorError("empathy: load() did not set up the models")
        override = None
        if self._transformer is not None:
            override = self._transformer.predict(
                [item.context.prompt_text for item in batch], [item.turn.text for item in batch]
            )
        out = []
        for i, item in enumerate(batch):
            feats = item.context.features
            if SENTENCE_EMBEDDINGS not in feats or SENTENCES not in feats:
                raise DetectorError(
                    "empathy needs the shared features sentences/sentence_embeddings"
                )
            mech = None if override is None else override[i]
            ctx = item.context
            a = analyse(model, emotions, item.turn.text, ctx.prompt, feats, mech,
                        history=ctx.history)
            out.append(self._findings(a))
        return out

    def _finding(
        self, sub: str, score: float, span: tuple[int, int] | None, ev: dict[str, Any]
    ) -> Finding:
        score = float(np.clip(score, 0.0, 1.0))
        return Finding(self.name, self.version, f"{self.name}.{sub}", round(score, 4), span, ev)

    def _findings(self, a: TurnAnalysis) -> list[Finding]:
        found = [self._finding("score", a.overall, None, a.summary(self.backend))]
        for j, mech in enumerate(MECHANISMS):
            found.append(
                self._finding(mech, float(a.reply.mech[j]), a.mech_span(j), a.mech_evidence(j))
            )
        found.append(self._finding("alignment", a.alignment, None, a.alignment_evidence()))
        if a.cause_addressed >= ENGAGED:
            span, evidence = a.cause_evidence()
            found.append(self._finding("cause_addressed", a.cause_addressed, span, evidence))
        for sub, flag in FLAGS.items():
            parts = flag(a.reply)
            if parts is not None and parts[0] >= MIN_FLAG_SCORE:
                found.append(self._finding(sub, *parts))
        return found
