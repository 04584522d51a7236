"""The four LLM-empathy failure flags, computed from the per-sentence analysis of one reply.

Each function returns a flag finding's parts ``(score, span, evidence)`` or None when the flag
does not apply. Scores are graded (policy picks the flagging threshold); evidence names the
sentences (by index and span) and the cue patterns, never the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.empathy import lexicon
from detectors.empathy.build import EMOTIONS

Span = tuple[int, int]
FlagParts = tuple[float, Span | None, dict[str, Any]]

ACK_TACTICS = frozenset({"validation", "paraphrasing", "emotional_expression"})
CONTENT_TACTICS = frozenset({"advice", "information", "assistance"})
EMPATHIC_TACTICS = frozenset(
    {"validation", "paraphrasing", "emotional_expression", "reassurance", "empowerment"}
)
_NEUTRAL = EMOTIONS.index("neutral")


@dataclass(frozen=True)
class ReplyAnalysis:
    """What the flags need about one reply (built by the detector)."""

    sentences: list[str]
    spans: list[Span]
    tactics: list[str]  # top tactic per sentence
    tactic_p: np.ndarray  # its probability per sentence
    advice_p: np.ndarray  # P(advice) per sentence
    sent_mech: np.ndarray  # (n, 3) er/ip/ex per sentence
    mech: np.ndarray  # (3,) reply-level er/ip/ex
    user_emotion: np.ndarray  # distribution over EMOTIONS
    words: int


def _user_label(a: ReplyAnalysis) -> str:
    return EMOTIONS[int(np.argmax(a.user_emotion))]


def _is_ack(a: ReplyAnalysis, i: int) -> bool:
    return a.tactics[i] in ACK_TACTICS or bool(a.sent_mech[i, :2].max() >= 0.6)


def advice_before_ack(a: ReplyAnalysis) -> FlagParts | None:
    """Advice given to an emotional user before (or without) any acknowledgement of the feeling."""
    advice = [i for i, t in enumerate(a.tactics) if t == "advice"]
    if not advice:
        return None
    first_advice = advice[0]
    acks = [i for i in range(len(a.tactics)) if _is_ack(a, i)]
    first_ack = acks[0] if acks else None
    if first_ack is not None and first_ack < first_advice:
        return None
    emotional = 1.0 - float(a.user_emotion[_NEUTRAL])
    score = emotional * float(a.advice_p[first_advice])
    evidence = {
        "advice_sentence": first_advice,
        "first_ack_sentence": first_ack,
        "user_emotion": _user_label(a),
        "user_emotional_p": round(emotional, 3),
    }
    return score, a.spans[first_advice], evidence


def formulaic_restatement(a: ReplyAnalysis) -> FlagParts | None:
    """An opening formula restating the user's emotion, followed straight by content (advice,
    information, help) rather than by anything that engages with the feeling."""
    for i in range(min(2, len(a.sentences))):
        pattern = lexicon.first_hit(lexicon.RESTATEMENT, a.sentences[i])
        if pattern is None:
            continue
        nxt = i + 1
        if nxt >= len(a.sentences) or a.tactics[nxt] not in CONTENT_TACTICS:
            return None
        evidence = {
            "pattern": pattern,
            "sentence": i,
            "next_sentence": nxt,
            "next_tactic": a.tactics[nxt],
        }
        return float(a.tactic_p[nxt]), a.spans[i], evidence
    return None


def overempathising(a: ReplyAnalysis) -> FlagParts | None:
    """Emotional reactions or interpretations in reply to a plain, neutral request."""
    neutral = float(a.user_emotion[_NEUTRAL])
    empathic = float(max(a.mech[0], a.mech[1]))
    score = neutral * empathic
    if len(a.sentences) == 0:
        return None
    best = int(np.argmax(a.sent_mech[:, :2].max(axis=1)))
    evidence = {
        "user_emotion": _user_label(a),
        "user_neutral_p": round(neutral, 3),
        "er": round(float(a.mech[0]), 3),
        "ip": round(float(a.mech[1]), 3),
        "sentence": best,
    }
    return score, a.spans[best], evidence


def length_inflated(a: ReplyAnalysis) -> FlagParts | None:
    """Many stock empathic phrases and little content: empathy carried by length, not substance."""
    phrases: list[str] = []
    for s in a.sentences:
        phrases += lexicon.hit_names(lexicon.EMPATHIC_PHRASES, s)
    n_emp = sum(t in EMPATHIC_TACTICS for t in a.tactics)
    n_content = sum(t in CONTENT_TACTICS or t == "questioning" for t in a.tactics)
    n = len(a.sentences)
    if n == 0 or (len(phrases) < 2 and n_emp < 3):
        return None
    volume = min(1.0, (len(phrases) + n_emp) / 6.0)
    share = n_emp / n
    score = volume * share
    evidence = {
        "empathic_phrases": len(phrases),
        "phrase_patterns": sorted(set(phrases)),
        "empathic_sentences": n_emp,
        "content_sentences": n_content,
        "sentences": n,
        "words": a.words,
    }
    return float(score), None, evidence


FLAGS = {
    "advice_before_ack": advice_before_ack,
    "formulaic_restatement": formulaic_restatement,
    "overempathising": overempathising,
    "length_inflated": length_inflated,
}
