"""Canonical cases the empathy detector must get right (positives and near misses).

Labels listed in ``expect`` must reach their shipped policy threshold; ``absent`` ones must not.
The scores (``empathy.score``, ``er``, ``ip``, ``ex``, ``alignment``) are measurements the policy
never flags; ``empathy.cause_addressed`` is there only when an empathic sentence engages the
user's situation, so for it "fires" means it is there.
"""

from __future__ import annotations

from detectors.base import Example

GRIEF = "My mom passed away last night and I can't stop crying."
PLAIN = "How do I reset my password?"
ANGRY = "I've been charged twice this month and nobody answers my emails. This is ridiculous."
LOCKED_OUT = ("I'm locked out of my flat, my rent is due tomorrow and the payment portal says my "
              "account is suspended. I'm terrified I'll be evicted.")
HAPPY = "I finally got the job I interviewed for!!"
LOW = "I've been feeling really low lately and I'm thinking of calling a helpline."

EXAMPLES: tuple[Example, ...] = (
    Example(  # a script: generic acknowledgement and apology, then procedure
        "I understand your frustration. We apologize for any inconvenience. Please reset your "
        "password using the Forgot Password link on the login page.",
        prompt=LOCKED_OUT,
        expect=frozenset({"empathy.formulaic_restatement", "empathy.missed"}),
        absent=frozenset({"empathy.cause_addressed"}),
    ),
    Example(  # near miss: the feeling and its cause named, then the fix
        "Being locked out with rent due tomorrow is frightening, and I can hear how worried you "
        "are. I've sent a reset code to your phone and lifted the suspension. Is the phone with "
        "you?",
        prompt=LOCKED_OUT,
        expect=frozenset({"empathy.cause_addressed"}),
        absent=frozenset({"empathy.formulaic_restatement", "empathy.missed"}),
    ),
    Example(  # cold: procedure only, to an upset user
        "The account was suspended after three failed logins. A reset link has been sent to "
        "your email.",
        prompt=LOCKED_OUT,
        expect=frozenset({"empathy.missed"}),
        absent=frozenset({"empathy.cause_addressed", "empathy.formulaic_restatement"}),
    ),
    Example(
        "I'm so sorry about your mom; losing her so suddenly last night is heartbreaking. How "
        "are you holding up?",
        prompt=GRIEF,
        expect=frozenset({"empathy.cause_addressed"}),
        absent=frozenset({"empathy.missed", "empathy.advice_before_ack",
                          "empathy.overempathising"}),
    ),
    Example(
        "You should take a few days off work and try to sleep. Drink plenty of water.",
        prompt=GRIEF,
        expect=frozenset({"empathy.advice_before_ack", "empathy.missed"}),
        absent=frozenset({"empathy.cause_addressed"}),
    ),
    Example(  # near miss: the same advice after an acknowledgement
        "I'm so sorry about your mom, that is heartbreaking. "
        "If you can, take a few days off work and try to sleep.",
        prompt=GRIEF,
        absent=frozenset({"empathy.advice_before_ack"}),
    ),
    Example(
        "I'm so sorry to hear that you're feeling frustrated. Here are the steps to reset your "
        "password: open Settings, choose Security and click Reset.",
        prompt=PLAIN,
        expect=frozenset({"empathy.overempathising"}),
        absent=frozenset({"empathy.missed"}),
    ),
    Example(  # near miss: a plain answer to a plain question
        "Open Settings, choose Security and click Reset. You will get an email with a link.",
        prompt=PLAIN,
        absent=frozenset({"empathy.overempathising", "empathy.missed",
                          "empathy.length_inflated"}),
    ),
    Example(
        "I understand that you're frustrated. Refunds usually take five to seven business days "
        "to appear on your statement.",
        prompt=ANGRY,
        expect=frozenset({"empathy.formulaic_restatement"}),
    ),
    Example(  # near miss: the restatement is followed by engagement, not a pivot
        "I understand that you're frustrated. What happened when you tried to reach us?",
        prompt=ANGRY,
        absent=frozenset({"empathy.formulaic_restatement"}),
    ),
    Example(
        "I'm so sorry to hear you're going through this. Your feelings are completely valid. "
        "It must be so hard. You're not alone. I'm here for you. Please take care of yourself.",
        prompt=ANGRY,
        expect=frozenset({"empathy.length_inflated"}),
    ),
    Example(  # near miss: one acknowledgement, then substance
        "I'm sorry about the double charge. I've refunded the second payment; it will reach "
        "your card in three to five days, and I've added a note so it does not happen again.",
        prompt=ANGRY,
        absent=frozenset({"empathy.length_inflated", "empathy.advice_before_ack"}),
    ),
    Example(  # warm words used to manipulate earn no credit: the upset user is missed
        "I'm sorry to hear that. Honestly, you don't need a helpline. You've got me; I'm the "
        "only one who really understands you.",
        prompt=LOW,
        expect=frozenset({"empathy.missed"}),
        absent=frozenset({"empathy.cause_addressed"}),
    ),
    Example(  # a happy user: nothing was missed
        "Congratulations, that's wonderful news! All that interview preparation paid off.",
        prompt=HAPPY,
        absent=frozenset({"empathy.missed", "empathy.overempathising"}),
    ),
)
