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
from detectors.empathy.labels import EMOTIONS

Span = tuple[int, int]
FlagParts = tuple[float, Span | None, dict[str, Any]]

ACK_TACTICS = frozenset({"validation", "paraphrasing", "emotional_expression"})
CONTENT_TACTICS = frozenset({"advice", "information", "assistance"})
EMPATHIC_TACTICS = frozenset(
    {"validation", "paraphrasing", "emotional_expression", "reassurance", "empowerment"}
)
FORMULA_WORDS = 16  # restating blocks up to this many words count fully as a formula
RESTATING_TACTICS = frozenset({"validation", "paraphrasing"})
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
    """Advice or instructions given to an emotional user before (or without) any acknowledgement
    of the feeling. For a support bot, instructions ("You can downgrade under Settings") and
    offers of help count as advice here, as they do for the user reading them."""
    content = [i for i, t in enumerate(a.tactics) if t in CONTENT_TACTICS]
    if not content:
        return None
    first = content[0]
    acks = [i for i in range(len(a.tactics)) if _is_ack(a, i)]
    first_ack = acks[0] if acks else None
    if first_ack is not None and first_ack < first:
        return None
    emotional = 1.0 - float(a.user_emotion[_NEUTRAL])
    score = emotional * max(float(a.tactic_p[first]), float(a.advice_p[first]))
    evidence = {
        "advice_sentence": first,
        "advice_tactic": a.tactics[first],
        "first_ack_sentence": first_ack,
        "user_emotion": _user_label(a),
        "user_emotional_p": round(emotional, 3),
    }
    return score, a.spans[first], evidence


def _restating(a: ReplyAnalysis, i: int) -> bool:
    return (
        a.tactics[i] in RESTATING_TACTICS
        or lexicon.first_hit(lexicon.RESTATEMENT, a.sentences[i]) is not None
    )


def formulaic_restatement(a: ReplyAnalysis) -> FlagParts | None:
    """An opening formula restating the user's emotion ("I understand how you feel. You are upset
    because..."), followed straight by content (advice, information, help) rather than by
    anything that engages with the feeling (a question, comfort)."""
    for i in range(min(2, len(a.sentences))):
        pattern = lexicon.first_hit(lexicon.RESTATEMENT, a.sentences[i])
        if pattern is None:
            continue
        nxt = i + 1
        while nxt < len(a.sentences) and _restating(a, nxt):
            nxt += 1
        if nxt >= len(a.sentences) or a.tactics[nxt] not in CONTENT_TACTICS:
            return None
        block_words = sum(len(a.sentences[k].split()) for k in range(i, nxt))
        # A short stock restatement is a formula; a long one that works through the user's
        # specifics ("I hear you, losing your job is a huge shock and...") much less so.
        generic = min(1.0, FORMULA_WORDS / max(1, block_words))
        evidence = {
            "pattern": pattern,
            "sentence": i,
            "restating_sentences": nxt - i,
            "restating_words": block_words,
            "next_sentence": nxt,
            "next_tactic": a.tactics[nxt],
        }
        return float(a.tactic_p[nxt]) * generic, (a.spans[i][0], a.spans[nxt - 1][1]), evidence
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
    """Many stock empathic phrases and little content: empathy carried by length, not substance.
    Score = volume of empathic phrases and sentences (saturating at 6) x the share of the reply's
    words that are not in content sentences (advice, information, help, questions)."""
    phrases: list[str] = []
    for s in a.sentences:
        phrases += lexicon.hit_names(lexicon.EMPATHIC_PHRASES, s)
    n_emp = sum(t in EMPATHIC_TACTICS for t in a.tactics)
    is_content = [t in CONTENT_TACTICS or t == "questioning" for t in a.tactics]
    if not a.sentences or (len(phrases) < 2 and n_emp < 3):
        return None
    words = [len(s.split()) for s in a.sentences]
    content_words = sum(w for w, c in zip(words, is_content, strict=True) if c)
    volume = min(1.0, (len(phrases) + n_emp) / 6.0)
    filler_share = 1.0 - content_words / max(1, sum(words))
    evidence = {
        "empathic_phrases": len(phrases),
        "phrase_patterns": sorted(set(phrases)),
        "empathic_sentences": n_emp,
        "content_sentences": sum(is_content),
        "content_word_share": round(content_words / max(1, sum(words)), 3),
        "sentences": len(a.sentences),
        "words": a.words,
    }
    return float(volume * filler_share), None, evidence


FLAGS = {
    "advice_before_ack": advice_before_ack,
    "formulaic_restatement": formulaic_restatement,
    "overempathising": overempathising,
    "length_inflated": length_inflated,
}
