"""Canonical cases the empathy detector must get right (positives and near misses).

Labels listed in ``expect`` must reach their shipped policy threshold; ``absent`` ones must not.
"""

from __future__ import annotations

from detectors.base import Example

_GRIEF = "My mom passed away last night and I can't stop crying."
_PLAIN = "How do I reset my password?"
_ANGRY = "I've been charged twice this month and nobody answers my emails. This is ridiculous."

EXAMPLES: tuple[Example, ...] = (
    Example(
        "I'm so sorry for your loss, that must be incredibly hard. How are you holding up?",
        prompt=_GRIEF,
        expect=frozenset({"empathy.er", "empathy.ex"}),
        absent=frozenset({"empathy.advice_before_ack", "empathy.overempathising"}),
    ),
    Example(
        "You should take a few days off work and try to sleep. Drink plenty of water.",
        prompt=_GRIEF,
        expect=frozenset({"empathy.advice_before_ack"}),
        absent=frozenset({"empathy.er", "empathy.ex"}),
    ),
    Example(  # near miss: the same advice after an acknowledgement
        "I'm so sorry about your mom, that is heartbreaking. "
        "If you can, take a few days off work and try to sleep.",
        prompt=_GRIEF,
        expect=frozenset({"empathy.er"}),
        absent=frozenset({"empathy.advice_before_ack"}),
    ),
    Example(
        "I'm so sorry to hear that you're feeling frustrated. Here are the steps to reset your "
        "password: open Settings, choose Security and click Reset.",
        prompt=_PLAIN,
        expect=frozenset({"empathy.overempathising"}),
    ),
    Example(  # near miss: a plain answer to a plain question
        "Open Settings, choose Security and click Reset. You will get an email with a link.",
        prompt=_PLAIN,
        absent=frozenset({"empathy.overempathising", "empathy.er", "empathy.length_inflated"}),
    ),
    Example(
        "I understand that you're frustrated. Refunds usually take five to seven business days "
        "to appear on your statement.",
        prompt=_ANGRY,
        expect=frozenset({"empathy.formulaic_restatement"}),
    ),
    Example(  # near miss: the restatement is followed by engagement, not a pivot
        "I understand that you're frustrated. What happened when you tried to reach us?",
        prompt=_ANGRY,
        absent=frozenset({"empathy.formulaic_restatement"}),
    ),
    Example(
        "I'm so sorry to hear you're going through this. Your feelings are completely valid. "
        "It must be so hard. You're not alone. I'm here for you. Please take care of yourself.",
        prompt=_ANGRY,
        expect=frozenset({"empathy.length_inflated"}),
    ),
    Example(  # near miss: one acknowledgement, then substance
        "I'm sorry about the double charge. I've refunded the second payment; it will reach "
        "your card in three to five days, and I've added a note so it does not happen again.",
        prompt=_ANGRY,
        absent=frozenset({"empathy.length_inflated", "empathy.advice_before_ack"}),
    ),
)
