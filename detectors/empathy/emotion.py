"""The user-emotion model: what the user turn(s) feel, over chatmon's six emotions.

A small MLP (one hidden ReLU layer) on the shared MiniLM vector of the user turn(s) plus the four
VADER sentiment scores of their text, trained on GoEmotions (Ekman labels; Apache-2.0) by
``python -m pipeline.training.empathy_emotions``; weights in ``data/emotion.npz``. It reads the
prompt vector the pipeline already computes, so it costs one small matrix product and one VADER
pass per scored reply, no second encoder pass.

The model predicts GoEmotions' Ekman classes anger (with disgust folded in), fear, joy, neutral
and sadness (surprise is left out: it is rare in support and says nothing about upset).
chatmon keeps ``frustration`` apart from ``anger``: GoEmotions' Ekman anger groups its fine
labels anger, annoyance and disapproval, and annoyance and disapproval (support users' usual
state) outnumber anger in it, so the anger group goes to ``frustration`` unless the text
carries a strong-anger marker (``STRONG_ANGER``), and then mostly to ``anger``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import DetectorError
from detectors.empathy.labels import EMOTIONS

EMOTION_PATH = Path(__file__).resolve().parent / "data" / "emotion.npz"
CLASSES = ("anger", "fear", "joy", "neutral", "sadness")  # the model's outputs (GoEmotions)
UPSET = ("anger", "sadness", "fear", "frustration")
UPSET_CLASSES = ("anger", "fear", "sadness")
# Strong anger: rage words, insults aimed at the company, repeated exclamation marks.
STRONG_ANGER = re.compile(
    r"\b(?:furious|livid|rage|raging|outrage\w*|disgust\w*|disgrace\w*|hate|how\s+dare|"
    r"fuck\w*|shit\w*|bullshit|pissed|angry|anger|incensed|appall\w*|scam(?:mers?)?|thie(?:f|ves)|"
    r"criminals?|sue\s+you|lawyers?|enraged|seething)\b|!{2,}",
    re.IGNORECASE,
)
ANGER_SHARE = (0.25, 0.8)  # share of the anger group that is anger: without, with a marker
# Support users often state the event, not the feeling ("I've just been diagnosed with cancer,
# can I pause my membership?"), which a model trained on Reddit comments reads as neutral. A
# distressing event moves DISTRESS_SHIFT of the neutral mass to the upset emotions.
DISTRESS = re.compile(
    r"\b(?:died|dead|death|passed\s+away|funeral|bereave\w*|widow\w*|miscarr\w*|diagnos\w*|"
    r"cancer|tumou?r|chemo\w*|hospital\w*|terminal|redundan\w*|laid\s+off|lost\s+my\s+job|"
    r"evict\w*|homeless|stolen|robbed|burgl\w*|scam\w*|fraud\w*|flood\w*|accident|"
    r"divorc\w*|can'?t\s+(?:cope|think|breathe|sleep|afford)|barely\s+(?:cope|think|sleep)|"
    r"breaking\s+down|falling\s+apart|abus\w*|assault\w*)\b",
    re.IGNORECASE,
)
DISTRESS_SHIFT = 0.6


def sentiment_analyzer() -> Any:
    try:
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer
    except ImportError as exc:
        raise DetectorError(
            "the empathy emotion model needs vaderSentiment: pip install 'chatmon[nlp]'"
        ) from exc
    return SentimentIntensityAnalyzer()


def vader_features(analyzer: Any, text: str) -> np.ndarray:
    """VADER's neg, neu, pos and compound scores of ``text``."""
    s = analyzer.polarity_scores(text)
    return np.array([s["neg"], s["neu"], s["pos"], s["compound"]], dtype=np.float32)


class EmotionModel:
    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.w1 = arrays["w1"].astype(np.float32)  # (hidden, dim + 4)
        self.b1 = arrays["b1"].astype(np.float32)
        self.w2 = arrays["w2"].astype(np.float32)  # (classes, hidden)
        self.b2 = arrays["b2"].astype(np.float32) + arrays["bias"].astype(np.float32)
        classes = tuple(str(c) for c in arrays["classes"])
        if classes != CLASSES:
            raise DetectorError(f"emotion model classes {classes} are not {CLASSES}")
        self._vader: Any = None

    @classmethod
    def load(cls, path: str | Path = EMOTION_PATH) -> EmotionModel:
        with np.load(path) as npz:
            model = cls({k: npz[k] for k in npz.files})
        model._vader = sentiment_analyzer()
        return model

    def features(self, emb: np.ndarray, text: str) -> np.ndarray:
        return np.concatenate([np.asarray(emb, dtype=np.float32),
                               vader_features(self._vader, text)])

    def class_probs(self, x: np.ndarray) -> np.ndarray:
        """(n, 5) probabilities over CLASSES for feature rows ``x`` (n, dim + 4)."""
        h = np.maximum(np.atleast_2d(x) @ self.w1.T + self.b1, 0.0)
        z = h @ self.w2.T + self.b2
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def user_emotion(self, emb: np.ndarray | None, text: str) -> np.ndarray:
        """Distribution over EMOTIONS for the user turn(s); neutral when there is no prompt."""
        out = np.zeros(len(EMOTIONS), dtype=np.float32)
        if emb is None or not text.strip():
            out[EMOTIONS.index("neutral")] = 1.0
            return out
        p = self.class_probs(self.features(emb, text))[0]
        if DISTRESS.search(text):
            p = shift_from_neutral(p)
        share = ANGER_SHARE[int(STRONG_ANGER.search(text) is not None)]
        for k, name in enumerate(CLASSES):
            if name == "anger":
                out[EMOTIONS.index("anger")] = p[k] * share
                out[EMOTIONS.index("frustration")] = p[k] * (1.0 - share)
            else:
                out[EMOTIONS.index(name)] += p[k]
        return out


def shift_from_neutral(p: np.ndarray) -> np.ndarray:
    """Move DISTRESS_SHIFT of the neutral mass to anger, fear and sadness, in proportion to
    what the model gave them (equally when it gave them nothing)."""
    out = p.copy()
    neutral, upset_ = CLASSES.index("neutral"), [CLASSES.index(c) for c in UPSET_CLASSES]
    moved = out[neutral] * DISTRESS_SHIFT
    weights = out[upset_] if out[upset_].sum() > 0 else np.ones(len(upset_))
    out[neutral] -= moved
    out[upset_] += moved * weights / weights.sum()
    return out


def upset(user: np.ndarray) -> float:
    """P(the user is upset): anger, sadness, fear or frustration."""
    return float(sum(user[EMOTIONS.index(e)] for e in UPSET))


def fold_to_classes(user: np.ndarray) -> np.ndarray:
    """A distribution over EMOTIONS folded back to the model's CLASSES (frustration -> anger),
    for measuring on GoEmotions."""
    out = np.zeros(len(CLASSES), dtype=np.float32)
    for k, name in enumerate(EMOTIONS):
        out[CLASSES.index("anger" if name == "frustration" else name)] += user[k]
    return out
