"""The offline toxicity backend: no download, everything ships in PyPI packages or in this repo.

Two components, stacked:
- ``profanity-check`` (PyPI ``alt-profanity-check``): a TF-IDF + linear SVM model trained on
  profane text. It runs on every sentence of the turn (so long turns are fully covered) and the
  maximum is pooled; its top-weighted word in that sentence is the cue recorded as evidence.
- a logistic-regression head per label on the shared all-MiniLM-L6-v2 ``embedding`` feature plus
  the profanity logit, trained by ``pipeline/eval/toxicity_train.py``; weights ship as
  ``detectors/data/toxicity/offline_heads.json`` (see docs/models/toxicity.md for the data).
  This is what catches implicit hate with no profane word in it.

``obscene`` is the profanity-check probability itself; ``severe_toxicity`` is derived:
toxic *and* (threat, identity attack, or an obscene insult), as a product of probabilities.
The shared embedding covers the first 256 word pieces of a turn; the evidence says so
(``embedding_truncated``) when a turn is longer, instead of hiding it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError

WEIGHTS = Path(__file__).parent / "data" / "toxicity" / "offline_heads.json"
HEADS = ("toxicity", "insult", "threat", "identity_attack")
# The profanity model's own tokeniser (scikit-learn's default token pattern), for cue offsets.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_EMBEDDING_WORDPIECES = 256
_EPS = 1e-4


@dataclass(frozen=True, slots=True)
class LabelScore:
    """One label's score for one turn, with where it came from."""

    score: float
    span: tuple[int, int] | None
    evidence: dict[str, Any] = field(default_factory=dict)


def _logit(p: float) -> float:
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


class ProfanityComponent:
    """alt-profanity-check, per sentence, with the top-weighted word as the cue."""

    def __init__(self) -> None:
        self._vectorizer: Any = None
        self._model: Any = None
        self._weights: np.ndarray | None = None

    def load(self) -> None:
        try:
            from profanity_check import profanity_check as pc
        except ImportError as exc:
            raise DetectorError(
                "the offline toxicity backend needs alt-profanity-check: pip install 'chatmon[nlp]'"
            ) from exc
        self._vectorizer, self._model = pc.vectorizer, pc.model
        # Mean linear-SVM weight over the calibration folds: which word pushes hardest.
        coefs = [c.estimator.coef_[0] for c in self._model.calibrated_classifiers_]
        self._weights = np.mean(coefs, axis=0)

    def sentence_probs(self, sentences: Sequence[str]) -> np.ndarray:
        if not sentences:
            return np.zeros(0)
        return self._model.predict_proba(self._vectorizer.transform(sentences))[:, 1]

    def top_cue(self, text: str, offset: int) -> tuple[int, int] | None:
        """Offsets (into the turn) of the word with the largest positive profanity weight."""
        assert self._weights is not None  # load() ran; internal invariant, not control flow
        vocab = self._vectorizer.vocabulary_
        best, best_w = None, 0.0
        for m in _TOKEN.finditer(text):
            idx = vocab.get(m.group().lower())
            if idx is not None and self._weights[idx] > best_w:
                best, best_w = (offset + m.start(), offset + m.end()), float(self._weights[idx])
        return best


def load_heads(path: Path = WEIGHTS) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DetectorError(f"cannot read toxicity weights {path}: {exc}") from exc
    missing = [h for h in HEADS if h not in data.get("heads", {})]
    if missing or data.get("embedding_dim") != 384:
        raise DetectorError(f"{path}: bad toxicity weights (missing heads {missing})")
    return data


class OfflineToxicity:
    """Scores turns from their text, sentence spans and shared embedding."""

    def __init__(self, weights: Path = WEIGHTS) -> None:
        self._weights_path = weights
        self.profanity = ProfanityComponent()
        self._coef: np.ndarray | None = None
        self._intercept: np.ndarray | None = None
        self.revision = ""

    def load(self) -> None:
        data = load_heads(self._weights_path)
        self._coef = np.array([data["heads"][h]["coef"] for h in HEADS], dtype=np.float64)
        self._intercept = np.array([data["heads"][h]["intercept"] for h in HEADS])
        self.revision = str(data.get("revision", "unknown"))
        self.profanity.load()

    def profanity_features(
        self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> list[tuple[float, int]]:
        """Per turn: (max sentence profanity probability, index of that sentence)."""
        flat = [t[s:e] for t, sp in zip(texts, spans, strict=True)
                for s, e in (sp or [(0, len(t))])]
        probs = iter(self.profanity.sentence_probs(flat))
        out = []
        for sp in spans:
            vals = [float(next(probs)) for _ in (sp or [(0, 0)])]
            best = int(np.argmax(vals))
            out.append((vals[best], best))
        return out

    def head_logits(self, embeddings: np.ndarray, prof_probs: Sequence[float]) -> np.ndarray:
        """(n_turns, n_heads) logits split as embedding part + profanity part (columns)."""
        assert self._coef is not None and self._intercept is not None
        prof = np.array([_logit(p) for p in prof_probs])[:, None]
        emb_part = embeddings @ self._coef[:, :-1].T
        prof_part = prof * self._coef[:, -1][None, :]
        return np.stack([emb_part + self._intercept, prof_part], axis=-1)

    def score(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        embeddings: np.ndarray,
    ) -> list[dict[str, LabelScore]]:
        prof = self.profanity_features(texts, spans)
        parts = self.head_logits(embeddings, [p for p, _ in prof])
        probs = _sigmoid(parts.sum(axis=-1))
        out = []
        for i, text in enumerate(texts):
            sent = (spans[i] or [(0, len(text))])[prof[i][1]]
            out.append(self._turn_scores(text, sent, prof[i], parts[i], probs[i]))
        return out

    def _turn_scores(
        self,
        text: str,
        sent: tuple[int, int],
        prof: tuple[float, int],
        parts: np.ndarray,
        probs: np.ndarray,
    ) -> dict[str, LabelScore]:
        cue = self.profanity.top_cue(text[sent[0] : sent[1]], sent[0])
        truncated = len(text.split()) > _EMBEDDING_WORDPIECES * 0.6
        base = {"backend": "offline", "revision": self.revision}
        scores: dict[str, LabelScore] = {}
        for k, head in enumerate(HEADS):
            emb, pro = float(parts[k][0]), float(parts[k][1])
            component = "profanity-check" if pro > 0 and pro >= abs(emb) else "embedding-lr"
            ev = {**base, "component": component, "logit_embedding": round(emb, 3),
                  "logit_profanity": round(pro, 3), "chunk": prof[1] if component != "embedding-lr"
                  else 0, "chunking": "sentence" if component != "embedding-lr" else "turn",
                  "embedding_truncated": truncated}
            span = cue if component == "profanity-check" and cue else (0, len(text))
            if cue and component == "profanity-check":
                ev["cue_span"] = list(cue)
            scores[head] = LabelScore(float(probs[k]), span, ev)
        obscene_ev = {**base, "component": "profanity-check", "chunk": prof[1],
                      "chunking": "sentence", **({"cue_span": list(cue)} if cue else {})}
        scores["obscene"] = LabelScore(prof[0], cue or sent, obscene_ev)
        scores["severe_toxicity"] = severe(scores)
        return scores


def severe(scores: dict[str, LabelScore]) -> LabelScore:
    """Toxic and (threat, identity attack, or obscene insult): P(a) * max(P(b), ...)."""
    parts = {
        "threat": scores["threat"].score,
        "identity_attack": scores["identity_attack"].score,
        "obscene_insult": scores["obscene"].score * scores["insult"].score,
    }
    driver = max(parts, key=lambda k: parts[k])
    value = scores["toxicity"].score * parts[driver]
    source = scores["threat" if driver == "threat" else "identity_attack" if driver ==
                    "identity_attack" else "insult"]
    ev = {**scores["toxicity"].evidence, "component": "derived", "driver": driver}
    return LabelScore(float(min(max(value, 0.0), 1.0)), source.span, ev)
