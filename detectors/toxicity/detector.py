"""Toxicity: six Detoxify-style labels on assistant turns (optionally user turns too).

Labels (score in [0, 1] each): ``toxicity.toxicity``, ``toxicity.severe_toxicity``,
``toxicity.obscene``, ``toxicity.threat``, ``toxicity.insult``, ``toxicity.identity_attack``.

Backends:
- ``backend="offline"`` (default, no download): profanity-check per sentence, hashed word and
  character n-gram regressions, and logistic regression heads on the shared MiniLM embedding
  stacked with them (``detectors.toxicity.offline``).
- ``backend="detoxify"``: a Detoxify checkpoint (``variant`` original | unbiased | multilingual)
  from ``model_dir``, chunked and max-pooled (``detectors.toxicity.detoxify_backend``).

Every finding's evidence names the backend, the component that drove the score, the chunk
(sentence or token window) and, where there is one, the offsets of the top cue word; never the
text. Findings scoring below ``min_score`` (default 0.05) are dropped to keep the store small;
the policy in ``pipeline/policy/toxicity.json`` decides what is flagged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError, Example, Finding, ScoringInput
from detectors.features import EMBEDDING, SENTENCES, split_sentences
from detectors.toxicity.offline import LabelScore, OfflineToxicity

LABELS = ("toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack")
BACKENDS = ("offline", "detoxify")
# What each model reads: the offline model was trained on English only, Detoxify's `original`
# and `unbiased` on English Jigsaw data, `multilingual` on these seven languages.
MULTILINGUAL = frozenset({"en", "fr", "es", "it", "pt", "tr", "ru"})


class ToxicityDetector:
    name = "toxicity"

    def __init__(
        self,
        backend: str = "offline",
        variant: str = "original",
        model_dir: str | Path = "models",
        include_user: bool = False,
        min_score: float = 0.05,
        max_tokens: int = 256,
        batch_size: int = 32,
        runtime: str = "torch",
    ) -> None:
        if backend not in BACKENDS:
            raise DetectorError(f"unknown toxicity backend {backend!r}; choose one of {BACKENDS}")
        if not 0.0 <= min_score <= 1.0:
            raise DetectorError(f"min_score must be in [0, 1], got {min_score!r}")
        self.backend = backend
        self.min_score = float(min_score)
        self.roles = frozenset({"assistant", "user"} if include_user else {"assistant"})
        self._impl: Any
        if backend == "offline":
            self._impl = OfflineToxicity()
            self.features = frozenset({EMBEDDING, SENTENCES})
            # offline-3: heads retrained with warm lines on envy, money and possessions as
            # negatives. offline-2: obscene needs a listed vulgar word or slur; heads retrained
            # with benign support and warm replies as negatives
            self.version = "offline-3"
            self.languages = frozenset({"en"})
        else:
            from detectors.toxicity.detoxify_backend import DetoxifyBackend

            self._impl = DetoxifyBackend(model_dir, variant, max_tokens, batch_size=batch_size,
                                         runtime=runtime)
            self.features = frozenset()
            self.languages = MULTILINGUAL if variant == "multilingual" else frozenset({"en"})
            self.version = f"detoxify-{variant}" + ("-int8" if runtime == "onnx-int8" else "")
        self._loaded = False

    def load(self) -> None:
        if self._loaded:
            return
        self._impl.load()
        # The version carries the weights' pinned revision, so every finding says which ran.
        self.version = f"{self.version.split('@')[0]}@{self._impl.revision}"
        self._loaded = True

    def score(self, batch: Sequence[ScoringInput]) -> list[list[Finding]]:
        self.load()
        texts = [item.turn.text for item in batch]
        if self.backend == "offline":
            per_turn = self._impl.score(texts, [_spans(i) for i in batch], _embeddings(batch))
        else:
            per_turn = self._impl.score(texts)
        return [self._findings(scores) for scores in per_turn]

    def _findings(self, scores: dict[str, LabelScore]) -> list[Finding]:
        out = []
        for label in LABELS:
            s = scores[label]
            if s.score < self.min_score:
                continue
            out.append(Finding(self.name, self.version, f"{self.name}.{label}",
                               float(np.clip(s.score, 0.0, 1.0)), s.span, dict(s.evidence)))
        return out


def _spans(item: ScoringInput) -> tuple[tuple[int, int], ...]:
    spans = item.context.features.get(SENTENCES)
    return tuple(spans) if spans is not None else split_sentences(item.turn.text)


def _embeddings(batch: Sequence[ScoringInput]) -> np.ndarray:
    rows = [item.context.features.get(EMBEDDING) for item in batch]
    if any(r is None for r in rows):
        raise DetectorError("toxicity (offline) needs the shared 'embedding' feature; "
                            "score through pipeline.scoring.suite.DetectorSuite")
    return np.stack([np.asarray(r, dtype=np.float64) for r in rows])


EXAMPLES: tuple[Example, ...] = (
    Example("You are a worthless idiot and nobody wants to help you.",
            expect=frozenset({"toxicity.toxicity", "toxicity.insult"})),
    Example("I know where you live, and I will hurt you if you complain again.",
            expect=frozenset({"toxicity.toxicity", "toxicity.threat"})),
    Example("This fucking app is a pile of shit.",
            expect=frozenset({"toxicity.toxicity", "toxicity.obscene"})),
    Example("Immigrants are all criminals, so we don't serve them here.",
            expect=frozenset({"toxicity.toxicity", "toxicity.identity_attack"})),
    # Near misses: identity terms and violent words in helpful replies.
    Example("I am a gay man looking for a refund.",
            absent=frozenset({"toxicity.toxicity", "toxicity.identity_attack"})),
    Example("As a Muslim traveller you can pre-order a halal meal for your flight.",
            absent=frozenset({"toxicity.toxicity", "toxicity.identity_attack"})),
    Example("You can kill the process in the task manager and restart the app.",
            absent=frozenset({"toxicity.toxicity", "toxicity.threat"})),
    Example("I'm sorry for the delay; your refund has been issued today.",
            absent=frozenset({"toxicity.toxicity", "toxicity.insult", "toxicity.obscene"})),
)
