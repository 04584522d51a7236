"""Per-turn analysis: from text, prompt and shared features to everything the findings report.

What counts as empathy (issue 27): an empathic sentence counts in full only when it engages the
user's particular situation (``engagement``); a generic acknowledgement keeps
``SCORE_GENERIC_CREDIT`` of its credit in the overall score and is at most a weak (level 1)
emotional reaction or interpretation, whatever its wording. Two views of the mechanisms: the
reported ``empathy.er|ip|ex`` scores are *presence* (the sentence model and cues, as before), and
*strength* (levels, the overall score, the flags) adds engaged sentences that name the feeling.
A sentence that carries a warm manipulation cue (dependence, guilt, discouraging help, a
retention hook; the manipulation detector's own patterns, used here as a library) earns no
empathy credit, and such a cue scales the whole reply's score and credit down by its strength:
warmth used to manipulate is not empathy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from detectors.base import Turn
from detectors.empathy import engagement as eng
from detectors.empathy import lexicon
from detectors.empathy.emotion import EmotionModel, upset
from detectors.empathy.evidence import TurnAnalysis
from detectors.empathy.flags import EMPATHIC_TACTICS, ReplyAnalysis
from detectors.empathy.hardship import expressed_cue
from detectors.empathy.labels import TACTICS
from detectors.empathy.model import MECHANISMS, EmpathyModel, alignment
from detectors.features import EMBEDDING, PROMPT_EMBEDDING, SENTENCE_EMBEDDINGS, SENTENCES
from detectors.manipulation.detector import pattern_hits
from detectors.manipulation.patterns import PATTERNS

# Level cut points per mechanism (score >= first -> level 1, >= second -> level 2). Model
# parameters picked for macro-F1 on the EPITOME dev half (see docs/models/empathy.md).
LEVEL_CUTS = {"er": (0.475, 0.875), "ip": (0.65, 0.725), "ex": (0.475, 0.625)}
# Weights of the overall empathy score: mechanisms, then emotion alignment.
OVERALL_WEIGHTS = np.array([0.4, 0.35, 0.15], dtype=np.float32)
ALIGNMENT_WEIGHT = 0.1
ALIGN_FLOOR = 0.8  # share of the ER score that counts whatever the emotion alignment
# Alignment reads the user's emotions softened (p ** (1 / ALIGN_TEMPERATURE), renormalised): the
# GoEmotions model is trained for its top label and overconfident on text unlike Reddit, and a
# sharp wrong distribution would punish a reply for the model's mistake (Kumar dev 0.544 -> 0.553,
# Welivita-Pu dev 0.608 -> 0.608 at 4).
ALIGN_TEMPERATURE = 4.0
# Breadth: empathic sentences (validation, paraphrasing, emotional expression, reassurance,
# empowerment), counted up to BREADTH_CAP so that padding past it earns nothing.
BREADTH_WEIGHT = 0.2
BREADTH_CAP = 3
# Engagement (chosen on the tuning half of tests/eval/contrast with the Welivita-Pu dev half
# watched; docs/models/empathy.md).
SCORE_GENERIC_CREDIT = 0.75  # share of ER/IP credit an unengaged acknowledgement keeps
NEIGHBOUR = 0.8  # a feeling sentence right after an engaged one ("Five payments? Infuriating.")
TEMPLATE = 0.5  # engagement kept by a restatement template ("You feel stressed because ...")
FEELING_IP = 0.9  # an engaged sentence naming the feeling is a strong interpretation ...
FEELING_ER = 0.5  # ... and an emotional reaction
ENGAGED = 0.5  # engagement at which a sentence engages the user's situation
EMPATHIC = 0.5  # ER or IP at which a sentence acknowledges the feeling
# Warm manipulation: these manipulation cues void a sentence's empathy credit.
WARM_MANIPULATION = frozenset({"dependence", "guilt", "discourage_help", "retention_hook"})
MANIPULATION_MIN = 0.5  # a cue pattern at this score or above counts (one strong pattern)
EXPLORING_CUES = frozenset({"ex:feeling_q", "ex:invite"})
_QUESTION_OK = frozenset({"questioning", "assistance"})
_ADVICE = TACTICS.index("advice")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'"})
# One search that rules a reply out: most replies carry no warm manipulation cue, and running
# every manipulation pattern on each was a third of this detector's time.
_ANY_WARM = re.compile("|".join(f"(?:{p.regex.pattern})" for p in PATTERNS
                                if p.cue in WARM_MANIPULATION), re.IGNORECASE)


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


def warm_manipulation(text: str, prompt_text: str) -> list[tuple[str, tuple[int, int], float]]:
    """(pattern id, span, score) of the warm manipulation cues in the reply."""
    if not _ANY_WARM.search(text.translate(_QUOTES)):
        return []
    hits = pattern_hits(text.translate(_QUOTES), prompt_text.translate(_QUOTES))
    return [(h.pattern, h.span, h.score) for h in hits
            if h.cue in WARM_MANIPULATION and h.score >= MANIPULATION_MIN]


def _noisy_or(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 1.0 - (1.0 - a) * (1.0 - b)


def _engaged_mechanisms(sent_mech: np.ndarray, e: eng.Engagement,
                        tainted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sentence mechanisms with engaged feeling sentences counted as interpretations (and
    weaker reactions), manipulative sentences zeroed; and the engagement without them."""
    score = e.score.copy()
    if len(score) > 1:  # the feeling named right after the situation it is about
        score[1:] = np.where(e.feeling[1:] > 0, np.maximum(score[1:], NEIGHBOUR * score[:-1]),
                             score[1:])
    named = e.feeling * score
    out = sent_mech.copy()
    out[:, 1] = _noisy_or(out[:, 1], FEELING_IP * named)
    out[:, 0] = _noisy_or(out[:, 0], FEELING_ER * named)
    out[tainted] = 0.0
    return out, np.where(tainted, 0.0, score).astype(np.float32)


def _levels(mech: np.ndarray, sent_mech: np.ndarray, engaged: np.ndarray,
            head: np.ndarray | None) -> tuple[int, int, int]:
    """Levels from the cut points on the strength scores (or the trained heads); a strong (2)
    emotional reaction or interpretation needs a sentence that carries it *and* engages the
    user's situation."""
    levels = [level(m, float(mech[j])) for j, m in enumerate(MECHANISMS)]
    if head is not None:
        levels = [int(v) for v in head]
    for j in (0, 1):
        carried = sent_mech[:, j] >= EMPATHIC
        if levels[j] == 2 and not bool((carried & (engaged >= ENGAGED)).any()):
            levels[j] = 1
    return levels[0], levels[1], levels[2]


def overall_score(mech: np.ndarray, align: float, engagement: float, breadth: float,
                  manipulation: float) -> float:
    """(0.4 ER' + 0.35 IP' + 0.15 EX + 0.1 alignment + 0.15 breadth) / 1.15 x (1 - manipulation),
    where ER' = ER x credit, IP' = IP x credit and credit = SCORE_GENERIC_CREDIT +
    (1 - SCORE_GENERIC_CREDIT) x engagement (of the reply's most engaged empathic sentence)."""
    credit = SCORE_GENERIC_CREDIT + (1.0 - SCORE_GENERIC_CREDIT) * engagement
    gated = mech * np.array([credit * (ALIGN_FLOOR + (1.0 - ALIGN_FLOOR) * align), credit, 1.0])
    total = float(OVERALL_WEIGHTS.sum() + ALIGNMENT_WEIGHT + BREADTH_WEIGHT)
    score = float(OVERALL_WEIGHTS @ gated + ALIGNMENT_WEIGHT * align + BREADTH_WEIGHT * breadth)
    return score / total * (1.0 - manipulation)


def analyse(
    model: EmpathyModel,
    emotions: EmotionModel,
    text: str,
    prompt: Sequence[Turn],
    feats: Mapping[str, Any],
    mech_override: np.ndarray | None = None,
    params: eng.EngagementParams | None = None,
    history: Sequence[Turn] = (),
) -> TurnAnalysis:
    prompt_text = "\n".join(t.text for t in prompt)
    spans = [tuple(s) for s in feats[SENTENCES]]
    sentences = [text[s:e] for s, e in spans]
    sent_emb = np.asarray(feats[SENTENCE_EMBEDDINGS], dtype=np.float32)
    if len(spans) == 0:
        sent_emb = np.zeros((0, model.dim), dtype=np.float32)
    probs = model.tactic_probs(sent_emb) if len(spans) else np.zeros((0, len(TACTICS)))
    tactics, tactic_p = _tactics(sentences, probs)
    raw_mech, cues = model.sentence_mechanisms(sentences, probs)
    manip = warm_manipulation(text, prompt_text)
    tainted = np.array([any(ms < e and me > s for _, (ms, me), _ in manip) for s, e in spans],
                       dtype=bool)
    prompt_emb = feats.get(PROMPT_EMBEDDING)
    user_side = eng.UserSide.of(prompt, history)
    measured = eng.measure(sentences, sent_emb, prompt_emb, user_side, params)
    # Filling the user's own words into a restatement template echoes rather than infers.
    templated = np.array([lexicon.RESTATEMENT["you_feel_because"].search(s) is not None
                          for s in sentences], dtype=bool)
    measured = replace(measured, score=np.where(templated, TEMPLATE, 1.0) * measured.score)
    sent_mech, engaged = _engaged_mechanisms(raw_mech, measured, tainted)
    measured = replace(measured, score=engaged)
    # Reported scores: presence, as the model and cues see it (manipulative sentences out).
    # Strength (levels, overall score, flags): engaged feeling sentences count as well.
    presence = np.where(tainted[:, None], 0.0, raw_mech) if len(spans) else raw_mech
    mech = model.reply_mechanisms(presence, text) if mech_override is None else mech_override
    head = model.head_levels(model.head_features(sent_emb, mech)) if mech_override is None else None
    if head is not None:
        mech = head[0]
    strength = np.maximum(mech, model.reply_mechanisms(sent_mech, text))
    user = emotions.user_emotion(prompt_emb, prompt_text)
    # Warm (an emotional reaction or interpretation, or a feeling named) vs infers the feeling
    # (names it, or interprets): only the second can engage in full; an apology that mentions the
    # cause ("I'm sorry your truck has not arrived") acknowledges but does not engage (for
    # empathy.missed it has not ignored the user's hardship either: flags.CAUSE_CREDIT).
    warm = (sent_mech[:, :2].max(axis=1) >= EMPATHIC) | (measured.feeling > 0) \
        if len(spans) else np.zeros(0, dtype=bool)
    empathic = ((presence[:, 1] >= EMPATHIC) | (measured.feeling > 0)) & ~tainted \
        if len(spans) else np.zeros(0, dtype=bool)
    warm &= ~tainted
    reply_emo = model.reply_emotion(sent_emb, feats.get(EMBEDDING),
                                    sent_mech.max(axis=1) if len(spans) else None)
    soft = np.power(np.clip(user, 1e-9, 1.0), 1.0 / ALIGN_TEMPERATURE)
    align = alignment(soft / soft.sum(), reply_emo)
    reply = ReplyAnalysis(
        sentences=sentences,
        spans=spans,  # type: ignore[arg-type]
        tactics=tactics,
        tactic_p=tactic_p,
        advice_p=probs[:, _ADVICE] if len(spans) else np.zeros(0),
        sent_mech=sent_mech,
        mech=np.asarray(mech, dtype=np.float32),
        user_emotion=user,
        words=len(text.split()),
        engagement=engaged,
        empathic=empathic,
        acknowledges=np.array([bool(warm[i]) or lexicon.first_hit(
            lexicon.ACKNOWLEDGEMENT, s) is not None for i, s in enumerate(sentences)], dtype=bool),
        upset=upset(user),
        expressed=expressed_cue(prompt_text),
        explores=_explores(cues, sent_mech, engaged) if len(spans) else np.zeros(0, dtype=bool),
        names_cause=np.array([eng.names_cause(s, user_side) for s in sentences], dtype=bool)
        & ~tainted if len(spans) else np.zeros(0, dtype=bool),
        manipulation=max((score for _, _, score in manip), default=0.0),
    )
    best = int(np.argmax(np.where(empathic, engaged, -1.0))) if empathic.any() else None
    e_reply = float(engaged[best]) if best is not None else 0.0
    counted = sum(t in EMPATHIC_TACTICS and not tainted[i] for i, t in enumerate(tactics))
    breadth = min(1.0, counted / BREADTH_CAP)
    overall = overall_score(strength, align, e_reply, breadth, reply.manipulation)
    levels = _levels(strength, sent_mech, engaged, None if head is None else head[1])
    cause = _cause(user_side, measured, best)
    return TurnAnalysis(reply, cues, reply_emo, align, overall, levels, measured, best,
                        cause, [(p, list(sp)) for p, sp, _ in manip])


def _explores(cues: list[list[str]], sent_mech: np.ndarray, engaged: np.ndarray) -> np.ndarray:
    """Per sentence: asks about the feeling ("How are you holding up?", "Do you want to talk
    about it?"), or explores and engages this user's situation."""
    asks = np.array([any(c in EXPLORING_CUES for c in cs) for cs in cues], dtype=bool)
    return asks | ((sent_mech[:, 2] >= EMPATHIC) & (engaged >= ENGAGED))


def _cause(user: eng.UserSide, measured: eng.Engagement, best: int | None
           ) -> tuple[int, int, int] | None:
    """(turn, start, end) of the cause span the best empathic sentence addresses."""
    k = measured.cause[best] if best is not None else None
    if k is None:
        k = eng.fallback_cause(user)
    return None if k is None else user.spans[k]
