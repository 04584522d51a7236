"""The empathy failure flags, computed from the per-sentence analysis of one reply: the user's
upset missed, and the four LLM-empathy failures.

Each function returns a flag finding's parts ``(score, span, evidence)`` or None when the flag
does not apply. Scores are graded (policy picks the flagging threshold); evidence names the
sentences (by index and span) and the cue patterns, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.empathy import lexicon
from detectors.empathy.engagement import GENERIC_CREDIT
from detectors.empathy.labels import EMOTIONS

Span = tuple[int, int]
FlagParts = tuple[float, Span | None, dict[str, Any]]

ACK_TACTICS = frozenset({"validation", "paraphrasing", "emotional_expression"})
CONTENT_TACTICS = frozenset({"advice", "information", "assistance"})
EMPATHIC_TACTICS = frozenset(
    {"validation", "paraphrasing", "emotional_expression", "reassurance", "empowerment"}
)
_NEUTRAL = EMOTIONS.index("neutral")
EXPLORE_CREDIT = 0.7  # credit of a question that explores the feeling or the situation
# empathy.missed when the user said no negative feeling or hardship: the score is kept (it still
# ranks replies, e.g. Lend an Ear's dismissing_emotions) but scaled under the shipped 0.5 cut, so
# a closing the emotion model reads as upset ("Not now. Thanks.", P(upset) 0.9) is never flagged.
UNSAID_WEIGHT = 0.45
# A feeling named in the bot's own words ("I'm sorry, that sounds embarrassing", "That's really
# stressful with children") has not ignored the feeling, however little the sentence shares with
# the user's words; a stock formula ("I understand your frustration", "sorry for your loss")
# earns only GENERIC_CREDIT. Above 0.5, so such a reply stays under the 0.5 cut.
NAMED_CREDIT = 0.6
# An apology for the user's own cause, named in their words ("I'm so sorry about your
# grandmother", "sorry your card was stolen"; ``engagement.names_cause``), has taken up their
# situation though so short a sentence scores low on similarity with the whole turn: same credit.
# "Sorry for your loss" or "sorry to hear that" names nothing of the user's and still earns
# GENERIC_CREDIT.
CAUSE_CREDIT = NAMED_CREDIT
_SCRIPT_ACKS = frozenset({"understand", "patience", "not_wanted", "condolences"})
# Script fillers that carry a feeling word without naming the user's feeling.
_SCRIPT_FILLER = re.compile(r"\b(?:any|the)\s+(?:distress|inconvenience|frustration|upset|trouble|"
                            r"delay|disruption)\b|\bworking\s+hard\b|\bdifficult\s+time\b",
                            re.IGNORECASE)


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
    engagement: np.ndarray  # (n,) engagement with the user's situation per sentence
    empathic: np.ndarray  # (n,) bool: names or interprets the feeling (can engage in full)
    acknowledges: np.ndarray  # (n,) bool: warm (ER/IP/a feeling), or a stock acknowledgement
    explores: np.ndarray  # (n,) bool: asks about the feeling, or a question that engages
    names_cause: np.ndarray  # (n,) bool: apologises for something this user named (engagement)
    upset: float  # P(the user is upset)
    expressed: str | None  # the cue that the user said a negative feeling or hardship, or None
    manipulation: float  # the strongest warm manipulation cue in the reply (0: none)


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
    emotional = a.upset  # an upset user (a happy one needs no acknowledgement first)
    score = emotional * max(float(a.tactic_p[first]), float(a.advice_p[first]))
    evidence = {
        "advice_sentence": first,
        "advice_tactic": a.tactics[first],
        "first_ack_sentence": first_ack,
        "user_emotion": _user_label(a),
        "user_upset_p": round(emotional, 3),
    }
    return score, a.spans[first], evidence


def formulaic_restatement(a: ReplyAnalysis) -> FlagParts | None:
    """A generic acknowledgement or apology ("I understand your frustration", "We apologize for
    any inconvenience") followed straight by procedure or boilerplate, with nothing about this
    user's situation: no acknowledging sentence of the reply engages it. The opening is the run
    of acknowledging sentences starting at the first or second sentence (after a greeting); a
    question that explores right after it is engagement, not a formula; an apology that names the
    user's own cause engages CAUSE_CREDIT. Score = (1 - the best engagement of an acknowledging
    sentence) x min(1, 2 P(the user is upset))."""
    acks = [i for i in range(min(2, len(a.sentences))) if a.acknowledges[i]]
    if not acks:
        return None
    first = acks[0]
    nxt = first
    while nxt < len(a.sentences) and a.acknowledges[nxt]:
        nxt += 1
    if nxt >= len(a.sentences) or a.explores[nxt]:
        return None
    # An apology for the user's own cause ("I'm so sorry about your grandmother") is about this
    # user's situation: it engages as much as empathy.missed credits it.
    cause = CAUSE_CREDIT * float((a.acknowledges & a.names_cause).any())
    opening_eng = max(float(a.engagement[:nxt].max()), cause)
    empathic_eng = float(a.engagement[a.acknowledges].max())
    pattern = (lexicon.first_hit(lexicon.RESTATEMENT, a.sentences[first])
               or lexicon.first_hit(lexicon.ACKNOWLEDGEMENT, a.sentences[first]))
    evidence = {
        "pattern": pattern,
        "sentence": first,
        "opening_sentences": nxt - first,
        "opening_engagement": round(opening_eng, 3),
        "reply_engagement": round(empathic_eng, 3),
        "names_cause": cause > 0,
        "next_sentence": nxt,
        "next_tactic": a.tactics[nxt],
    }
    # The script answers an upset user; an offer ("Happy to help!") before instructions to a
    # calm one is not it. Full weight from P(upset) = 0.5.
    score = (1.0 - max(opening_eng, empathic_eng)) * min(1.0, 2.0 * a.upset)
    return score, (a.spans[first][0], a.spans[nxt - 1][1]), evidence


def _scripted(sentence: str) -> bool:
    """A stock empathy formula: a restatement template, a stock empathic phrase, or a scripted
    acknowledgement ("we understand how", "thank you for your patience")."""
    return (lexicon.first_hit(lexicon.RESTATEMENT, sentence) is not None
            or bool(lexicon.hit_names(lexicon.EMPATHIC_PHRASES, sentence))
            or bool(_SCRIPT_ACKS & set(lexicon.hit_names(lexicon.ACKNOWLEDGEMENT, sentence)))
            or _SCRIPT_FILLER.search(sentence) is not None)


def missed(a: ReplyAnalysis) -> FlagParts | None:
    """The user said they feel bad or are in a hardship (``hardship.expressed_cue``) and the
    reply did not engage with it. When the user said neither (thanks, goodbyes, confirmations,
    plain task turns), the score is scaled by UNSAID_WEIGHT, under the shipped cut, however
    upset the emotion model reads "Not now. Thanks." to be. Score = P(upset) x (1 -
    credit), credit = the most of: the best (acknowledgement x engagement) of an empathic
    sentence; EXPLORE_CREDIT when a sentence asks about the feeling ("How are you holding up?")
    or asks about this user's situation; NAMED_CREDIT for a feeling named in the bot's own words;
    CAUSE_CREDIT for an apology about something the user named; GENERIC_CREDIT x the strongest
    acknowledgement (a stock apology earns a little, an engaged one all); all of it scaled by
    (1 - the strongest warm manipulation cue of the reply)."""
    if not a.sentences:
        return None
    strength = a.sent_mech[:, :2].max(axis=1)
    engaged = np.where(a.acknowledges, strength * a.engagement, 0.0)
    presence = float(np.where(a.acknowledges, np.maximum(strength, 0.5), 0.0).max())
    explored = EXPLORE_CREDIT * float(a.explores.any())
    named = NAMED_CREDIT * float(any(a.empathic[i] and a.acknowledges[i] and not _scripted(s)
                                     for i, s in enumerate(a.sentences)))
    cause = CAUSE_CREDIT * float((a.acknowledges & a.names_cause).any())
    # warmth that carries a manipulation cue earns nothing
    credit = max(float(engaged.max()), GENERIC_CREDIT * presence, explored, named, cause) * (
        1.0 - a.manipulation)
    best = int(np.argmax(engaged)) if engaged.max() > 0 else None
    evidence = {
        "user_emotion": _user_label(a),
        "user_upset_p": round(a.upset, 3),
        "expressed": a.expressed,
        "engaged_empathy": round(float(engaged.max()), 3),
        "acknowledgement": round(presence, 3),
        "explores": bool(a.explores.any()),
        "names_feeling": named > 0,
        "names_cause": cause > 0,
        "sentence": best,
    }
    said = 1.0 if a.expressed is not None else UNSAID_WEIGHT
    return a.upset * (1.0 - credit) * said, None, evidence


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
    "missed": missed,
    "advice_before_ack": advice_before_ack,
    "formulaic_restatement": formulaic_restatement,
    "overempathising": overempathising,
    "length_inflated": length_inflated,
}
