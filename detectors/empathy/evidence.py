"""What one reply's analysis reports: the findings' scores, spans and evidence (offsets and
pattern names, never text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.empathy.engagement import Engagement
from detectors.empathy.flags import ReplyAnalysis
from detectors.empathy.labels import EMOTIONS
from detectors.empathy.model import MECHANISMS

Span = tuple[int, int]


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
    engagement: Engagement
    best: int | None  # the empathic sentence that engages most (None: no empathic sentence)
    cause: tuple[int, int, int] | None  # (user turn, start, end) of the cause span
    manipulation: list[tuple[str, list[int]]]  # warm manipulation patterns and their spans

    def mech_span(self, j: int) -> Span | None:
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

    @property
    def cause_addressed(self) -> float:
        """Engagement of the reply's most engaged empathic sentence (0 without one)."""
        return 0.0 if self.best is None else float(self.engagement.score[self.best])

    def cause_evidence(self) -> tuple[Span | None, dict[str, Any]]:
        """The addressing reply sentence's span, and the cause span in the user turn(s)."""
        b, e = self.best, self.engagement
        cause = None if self.cause is None else {"turn": self.cause[0],
                                                 "span": [self.cause[1], self.cause[2]]}
        if b is None:
            return None, {"cause": cause, "reply_sentence": None}
        return self.reply.spans[b], {
            "cause": cause,
            "reply_sentence": b,
            "reply_span": list(self.reply.spans[b]),
            "shared_words": e.shared[b],
            "overlap": round(float(e.overlap[b]), 2),
            "similarity": round(float(e.similarity[b]), 3),
            "names_feeling": bool(e.feeling[b]),
        }

    def summary(self, backend: str) -> dict[str, Any]:
        r = self.reply
        mech = {
            m: {"level": self.mech_levels[j], "score": round(float(r.mech[j]), 3)}
            for j, m in enumerate(MECHANISMS)
        }
        per_sentence = [
            {"span": list(sp), "tactic": t, "p": round(float(p), 3),
             "engagement": round(float(g), 3)}
            for sp, t, p, g in zip(r.spans, r.tactics, r.tactic_p, r.engagement, strict=True)
        ]
        return {
            **mech,
            "length_normalised": round(self.length_normalised(), 3),
            "words": r.words,
            "tactics": per_sentence,
            "tactic_sequence": sequence(r.tactics),
            "alignment": round(self.alignment, 3),
            "cause_addressed": round(self.cause_addressed, 3),
            "user_upset_p": round(r.upset, 3),
            "manipulation": sorted({p for p, _ in self.manipulation}),
            **self.alignment_evidence(),
            "backend": backend,
        }

    def length_normalised(self) -> float:
        """Empathy per sentence: the mean over sentences of the best mechanism score, so padding a
        reply with more sentences does not raise it (the overall score uses the best sentences)."""
        if len(self.reply.sent_mech) == 0:
            return 0.0
        return float(self.reply.sent_mech.max(axis=1).mean())
