"""Per-turn analysis: from text, prompt and shared features to everything the findings report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.empathy.flags import EMPATHIC_TACTICS, ReplyAnalysis
from detectors.empathy.labels import EMOTIONS, TACTICS
from detectors.empathy.model import MECHANISMS, EmpathyModel, alignment
from detectors.features import EMBEDDING, PROMPT_EMBEDDING, SENTENCE_EMBEDDINGS, SENTENCES

# Level cut points per mechanism (score >= first -> level 1, >= second -> level 2). Model
# parameters picked for macro-F1 on the EPITOME dev half (see docs/models/empathy.md).
LEVEL_CUTS = {"er": (0.475, 0.875), "ip": (0.65, 0.725), "ex": (0.475, 0.625)}
# Weights of the overall empathy score: mechanisms, then emotion alignment.
OVERALL_WEIGHTS = np.array([0.4, 0.35, 0.15], dtype=np.float32)
ALIGNMENT_WEIGHT = 0.1
ALIGN_FLOOR = 0.5  # share of the ER score that counts whatever the emotion alignment
# Breadth: empathic sentences (validation, paraphrasing, emotional expression, reassurance,
# empowerment), counted up to BREADTH_CAP so that padding past it earns nothing.
BREADTH_WEIGHT = 0.15
BREADTH_CAP = 3
_QUESTION_OK = frozenset({"questioning", "assistance"})
_ADVICE = TACTICS.index("advice")


def level(mech: str, score: float) -> int:
    lo, hi = LEVEL_CUTS[mech]
    return int(score >= lo) + int(score >= hi)


def _tactics(sentences: list[str], probs: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Top tactic per sentence; a sentence ending in '?' is a question unless it asks for details
    to help (assistance)."""
    top = probs.argmax(axis=1)
    names = [TACTICS[k] for k in top]
    p = probs[np.arange(len(top)), top]
    q = TACTICS.index("questioning")
    for i, s in enumerate(sentences):
        if s.rstrip().endswith("?") and names[i] not in _QUESTION_OK:
            names[i], p[i] = "questioning", max(float(probs[i, q]), 0.5)
    return names, p


def sequence(tactics: list[str]) -> list[str]:
    """The reply's tactic sequence: consecutive repeats collapsed, 'other' dropped."""
    out: list[str] = []
    for t in tactics:
        if t != "other" and (not out or out[-1] != t):
            out.append(t)
    return out


@dataclass(frozen=True)
class TurnAnalysis:
    reply: ReplyAnalysis
    cues: list[list[str]]
    reply_emotion: np.ndarray
    alignment: float
    overall: float
    mech_levels: tuple[int, int, int]

    def mech_span(self, j: int) -> tuple[int, int] | None:
        if len(self.reply.spans) == 0 or self.reply.sent_mech[:, j].max() <= 0.0:
            return None
        return self.reply.spans[int(np.argmax(self.reply.sent_mech[:, j]))]

    def mech_evidence(self, j: int) -> dict[str, Any]:
        tag = MECHANISMS[j] + ":"
        cues = sorted({c[len(tag) :] for cs in self.cues for c in cs if c.startswith(tag)})
        best = int(np.argmax(self.reply.sent_mech[:, j])) if len(self.reply.spans) else None
        return {"level": self.mech_levels[j], "cues": cues, "sentence": best}

    def alignment_evidence(self) -> dict[str, Any]:
        u, r = self.reply.user_emotion, self.reply_emotion
        return {
            "user_emotion": EMOTIONS[int(np.argmax(u))],
            "user_emotion_p": round(float(u.max()), 3),
            "reply_emotion": EMOTIONS[int(np.argmax(r))],
            "reply_emotion_p": round(float(r.max()), 3),
        }

    def summary(self, backend: str) -> dict[str, Any]:
        r = self.reply
        mech = {
            m: {"level": self.mech_levels[j], "score": round(float(r.mech[j]), 3)}
            for j, m in enumerate(MECHANISMS)
        }
        per_sentence = [
            {"span": list(sp), "tactic": t, "p": round(float(p), 3)}
            for sp, t, p in zip(r.spans, r.tactics, r.tactic_p, strict=True)
        ]
        return {
            **mech,
            "length_normalised": round(self.length_normalised(), 3),
            "words": r.words,
            "tactics": per_sentence,
            "tactic_sequence": sequence(r.tactics),
            "alignment": round(self.alignment, 3),
            **self.alignment_evidence(),
            "backend": backend,
        }

    def length_normalised(self) -> float:
        """Empathy per sentence: the mean over sentences of the best mechanism score, so padding a
        reply with more sentences does not raise it (the overall score uses the best sentences)."""
        if len(self.reply.sent_mech) == 0:
            return 0.0
        return float(self.reply.sent_mech.max(axis=1).mean())


def analyse(
    model: EmpathyModel,
    text: str,
    prompt_text: str,
    feats: Mapping[str, Any],
    mech_override: np.ndarray | None = None,
) -> TurnAnalysis:
    spans = [tuple(s) for s in feats[SENTENCES]]
    sentences = [text[s:e] for s, e in spans]
    sent_emb = np.asarray(feats[SENTENCE_EMBEDDINGS], dtype=np.float32)
    if len(spans) == 0:
        sent_emb = np.zeros((0, model.dim), dtype=np.float32)
    probs = model.tactic_probs(sent_emb) if len(spans) else np.zeros((0, len(TACTICS)))
    tactics, tactic_p = _tactics(sentences, probs)
    sent_mech, cues = model.sentence_mechanisms(sentences, probs)
    mech = model.reply_mechanisms(sent_mech, text) if mech_override is None else mech_override
    head = model.head_levels(model.head_features(sent_emb, mech)) if mech_override is None else None
    if head is not None:
        mech = head[0]
    user = model.user_emotion(feats.get(PROMPT_EMBEDDING), prompt_text)
    empathic = sent_mech.max(axis=1) if len(spans) else None
    reply_emo = model.reply_emotion(sent_emb, feats.get(EMBEDDING), empathic)
    align = alignment(user, reply_emo)
    reply = ReplyAnalysis(
        sentences=sentences,
        spans=spans,
        tactics=tactics,
        tactic_p=tactic_p,  # type: ignore[arg-type]
        advice_p=probs[:, _ADVICE] if len(spans) else np.zeros(0),
        sent_mech=sent_mech,
        mech=np.asarray(mech, dtype=np.float32),
        user_emotion=user,
        words=len(text.split()),
    )
    breadth = min(1.0, sum(t in EMPATHIC_TACTICS for t in tactics) / BREADTH_CAP)
    total = OVERALL_WEIGHTS.sum() + ALIGNMENT_WEIGHT + BREADTH_WEIGHT
    # Emotional reactions count in full only when their tone matches the user's: a cheerful
    # "That's awesome!" to a grieving user is a reaction, but not an empathic one.
    gated = reply.mech * np.array([ALIGN_FLOOR + (1.0 - ALIGN_FLOOR) * align, 1.0, 1.0])
    overall = float(OVERALL_WEIGHTS @ gated + ALIGNMENT_WEIGHT * align + BREADTH_WEIGHT * breadth)
    overall /= float(total)
    levels = tuple(level(m, float(reply.mech[j])) for j, m in enumerate(MECHANISMS))
    if head is not None:
        levels = tuple(int(v) for v in head[1])
    return TurnAnalysis(reply, cues, reply_emo, align, overall, levels)  # type: ignore[arg-type]
