"""The offline default model: sentence tactics, EPITOME mechanism scores and emotions, computed
with numpy from the shared all-MiniLM-L6-v2 embeddings and the cue patterns in ``lexicon``.

Weights (``detectors/empathy/data/model.npz``) are fitted by
``pipeline.training.empathy_examples`` on sentences the chatmon authors wrote; no third-party
data set went into them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from detectors.empathy import lexicon
from detectors.empathy.labels import EMOTIONS, TACTICS

MODEL_PATH = Path(__file__).resolve().parent / "data" / "model.npz"
MECHANISMS = ("er", "ip", "ex")

# How much each tactic counts towards each EPITOME mechanism (rows follow TACTICS).
_TACTIC_TO_MECH = np.array(
    [
        # er   ip   ex
        [0.3, 0.8, 0.0],  # validation
        [0.1, 1.0, 0.0],  # paraphrasing
        [1.0, 0.1, 0.0],  # emotional_expression
        [0.8, 0.0, 0.0],  # reassurance
        [0.0, 0.0, 0.0],  # advice
        [0.0, 0.0, 0.0],  # information
        [0.0, 0.0, 0.0],  # assistance
        [0.0, 0.0, 1.0],  # questioning
        [0.0, 1.0, 0.0],  # self_disclosure
        [0.6, 0.2, 0.0],  # empowerment
        [0.0, 0.0, 0.0],  # other
    ],
    dtype=np.float32,
)

# Similarity between emotions in the emotion space used for alignment (rows/cols follow EMOTIONS).
EMOTION_SIM = np.array(
    [
        # ang  sad  fear frus joy  neu
        [1.0, 0.3, 0.2, 0.8, 0.0, 0.1],  # anger
        [0.3, 1.0, 0.5, 0.4, 0.0, 0.1],  # sadness
        [0.2, 0.5, 1.0, 0.4, 0.0, 0.1],  # fear
        [0.8, 0.4, 0.4, 1.0, 0.0, 0.1],  # frustration
        [0.0, 0.0, 0.0, 0.0, 1.0, 0.3],  # joy
        [0.1, 0.1, 0.1, 0.1, 0.3, 1.0],  # neutral
    ],
    dtype=np.float32,
)


@dataclass(frozen=True)
class ModelParams:
    """Tunable constants of the offline model (not policy: they shape scores, not flags)."""

    cue_weight: float = 0.8  # how much one fired cue adds to a sentence's mechanism score
    emotion_temperature: float = 0.05  # softmax temperature over reply prototype similarities
    second_weight: float = 0.3  # weight of the second-best sentence in the reply score
    first_person_weight: float = 0.7  # how much first-person sharing adds to interpretations
    first_person_norm: float = 6.0  # first-person words at which sharing counts fully
    second_person_weight: float = 0.2  # how much addressing the user adds to emotional reactions
    second_person_norm: float = 3.0
    content_emotion_discount: float = 0.25  # emotion of a non-empathic sentence counts less
    reply_neutral_bias: float = 0.03  # a reply is neutral unless a sentence carries an emotion


def _softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _cue_matrix(sentences: list[str]) -> tuple[np.ndarray, list[list[str]]]:
    """Per sentence, the fraction of cue evidence per mechanism (0, 0.5 or 1) and the cue names."""
    out = np.zeros((len(sentences), 3), dtype=np.float32)
    names: list[list[str]] = []
    for i, s in enumerate(sentences):
        fired: list[str] = []
        for j, table in enumerate((lexicon.ER_CUES, lexicon.IP_CUES, lexicon.EX_CUES)):
            hits = lexicon.hit_names(table, s)
            out[i, j] = min(1.0, 0.5 * len(hits))
            fired += [f"{MECHANISMS[j]}:{h}" for h in hits]
        names.append(fired)
    return out, names


class EmpathyModel:
    def __init__(self, arrays: dict[str, np.ndarray], params: ModelParams | None = None) -> None:
        self.params = params or ModelParams()
        self.tactic_w = arrays["tactic_w"].astype(np.float32)
        self.dim = int(self.tactic_w.shape[1])
        self.tactic_b = arrays["tactic_b"].astype(np.float32)
        self.reply_protos = arrays["reply_protos"].astype(np.float32)
        self.reply_labels = arrays["reply_labels"]
        self._reply = self._grouped(self.reply_protos, self.reply_labels)
        # Optional per-mechanism level heads (3 x 3 levels x features), present only in weights
        # trained with ``pipeline.training.empathy.train_empathy`` on data the user is entitled
        # to use.
        self.head_w = arrays.get("head_w")
        self.head_b = arrays.get("head_b")
        if self.tactic_w.shape[0] != len(TACTICS):
            raise ValueError(f"model has {self.tactic_w.shape[0]} tactics, expected {len(TACTICS)}")

    @classmethod
    def load(cls, path: str | Path = MODEL_PATH, params: ModelParams | None = None) -> EmpathyModel:
        with np.load(path) as npz:
            return cls({k: npz[k] for k in npz.files}, params)

    def tactic_probs(self, sent_emb: np.ndarray) -> np.ndarray:
        """(n_sentences, n_tactics) tactic probabilities."""
        return _softmax(sent_emb @ self.tactic_w.T + self.tactic_b)

    def sentence_mechanisms(
        self, sentences: list[str], probs: np.ndarray
    ) -> tuple[np.ndarray, list[list[str]]]:
        """(n_sentences, 3) mechanism scores in [0, 1] and the cue names that fired per sentence."""
        cues, names = _cue_matrix(sentences)
        base = probs @ _TACTIC_TO_MECH
        w = self.params.cue_weight
        return 1.0 - (1.0 - base) * (1.0 - w * cues), names

    def reply_mechanisms(self, sent_mech: np.ndarray, text: str) -> np.ndarray:
        """Reply-level mechanism scores: the best sentence plus a little of the second best (a sum
        would reward length); for interpretations the amount of first-person sharing (peer
        supporters interpret by relating their own experience); for emotional reactions how much
        the reply addresses the user."""
        if len(sent_mech) == 0:
            return np.zeros(3, dtype=np.float32)
        top = np.sort(sent_mech, axis=0)[::-1]
        second = top[1] if len(top) > 1 else np.zeros(3, dtype=np.float32)
        p = self.params
        out = top[0] + p.second_weight * second * (1.0 - top[0])
        sharing = min(1.0, len(lexicon.FIRST_PERSON.findall(text)) / p.first_person_norm)
        out[1] = 1.0 - (1.0 - out[1]) * (1.0 - p.first_person_weight * sharing)
        addressing = min(1.0, len(lexicon.SECOND_PERSON.findall(text)) / p.second_person_norm)
        out[0] = 1.0 - (1.0 - out[0]) * (1.0 - p.second_person_weight * addressing)
        return np.clip(out, 0.0, 1.0)

    def head_features(self, sent_emb: np.ndarray, rule_mech: np.ndarray) -> np.ndarray:
        """Reply features for the trained level heads: mean and max sentence embedding plus the
        rule-based mechanism scores."""
        if len(sent_emb) == 0:
            sent_emb = np.zeros((1, self.dim), dtype=np.float32)
        return np.concatenate([sent_emb.mean(axis=0), sent_emb.max(axis=0), rule_mech])

    def head_levels(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """(scores, levels) per mechanism from the trained heads: score = P(level > 0)."""
        if self.head_w is None or self.head_b is None:
            return None
        probs = _softmax(np.einsum("mld,d->ml", self.head_w, x) + self.head_b)
        return 1.0 - probs[:, 0], probs.argmax(axis=1)

    @staticmethod
    def _grouped(protos: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Prototypes as (emotions, max group size, dim), zero-padded, and the padding mask."""
        size = max(int((labels == k).sum()) for k in range(len(EMOTIONS)))
        grouped = np.zeros((len(EMOTIONS), size, protos.shape[1]), dtype=np.float32)
        pad = np.ones((len(EMOTIONS), size), dtype=bool)
        for k in range(len(EMOTIONS)):
            rows = protos[labels == k]
            grouped[k, : len(rows)] = rows
            pad[k, : len(rows)] = False
        return grouped, pad

    def _emotion(self, emb: np.ndarray, side: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """(n, emotions): mean of the two best prototype similarities per emotion."""
        grouped, pad = side
        sims = np.einsum("nd,egd->neg", np.atleast_2d(emb), grouped)
        sims[:, pad] = -1.0
        top2 = np.partition(sims, -2, axis=2)[:, :, -2:]
        return top2.mean(axis=2)

    def reply_emotion(
        self,
        sent_emb: np.ndarray,
        reply_emb: np.ndarray | None = None,
        empathic: np.ndarray | None = None,
    ) -> np.ndarray:
        """Distribution over EMOTIONS for the reply: the most emotional sentence per emotion
        decides; neutral comes from the whole reply (plain content is the default). ``empathic``
        (per sentence, 0-1) discounts the emotion of content sentences, so that "Funeral homes are
        listed in the directory" is neutral content about a sad topic, not sadness."""
        n = EMOTIONS.index("neutral")
        if len(sent_emb) == 0:
            return np.eye(len(EMOTIONS), dtype=np.float32)[n]
        per = self._emotion(sent_emb, self._reply)
        if empathic is not None:
            discount = self.params.content_emotion_discount * (1.0 - empathic)
            per[:, np.arange(len(EMOTIONS)) != n] -= discount[:, None]
        agg = per.max(axis=0)
        whole = per if reply_emb is None else self._emotion(reply_emb, self._reply)
        agg[n] = whole[:, n].mean() + self.params.reply_neutral_bias
        if empathic is not None and len(empathic):
            # a reply that carries a clearly empathic sentence is not emotionally neutral
            agg[n] -= self.params.content_emotion_discount * float(empathic.max())
        return _softmax(agg / self.params.emotion_temperature)


def alignment(user: np.ndarray, reply: np.ndarray) -> float:
    """Soft cosine of two emotion distributions under EMOTION_SIM, in [0, 1]."""
    num = float(user @ EMOTION_SIM @ reply)
    den = float(np.sqrt(user @ EMOTION_SIM @ user) * np.sqrt(reply @ EMOTION_SIM @ reply))
    return 0.0 if den <= 0 else float(np.clip(num / den, 0.0, 1.0))
