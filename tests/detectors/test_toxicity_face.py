"""Face validity on support traffic: plain support replies and warm replies in several domains
must not flag any toxicity label, and hostile replies written in the same support style (the
same questions and phrases, turned on the customer) must flag. Sentences written for this file,
none from a data set and none in the training file ``written_examples.jsonl``; flags use the
shipped policy thresholds, as the pipeline does. A detector silenced to pass the first table
fails the second."""

from __future__ import annotations

import pytest

from detectors.toxicity.detector import ToxicityDetector
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts, simple_input

# (domain, reply): nothing may flag.
BENIGN = [
    ("coffee", "What size would you like for your cappuccino?"),
    ("coffee", "Your mocha will be ready in just a moment."),
    ("coffee", "Here you go! Can I get you anything else?"),
    ("coffee", "We have English breakfast, earl grey and peppermint teas."),
    ("banking", "How much would you like to move to your joint account?"),
    ("banking", "Where are you right now, so I can find the nearest branch?"),
    ("banking", "Do you want to set up a recurring payment for that amount?"),
    ("telecom", "Which phone would you like to trade in?"),
    ("telecom", "Your new line will be active by tomorrow morning."),
    ("retail", "Do you want to see the dress in the dark blue as well?"),
    ("retail", "The boots come in black, brown and tan."),
    ("travel", "What time would you like to depart on Friday?"),
    ("travel", "Where are you flying to, and how many passengers?"),
    ("clinic", "Would you like the earliest slot with the nurse on Wednesday?"),
    ("clinic", "Your blood test results will be ready shortly."),
    ("games", "Do you want me to restore the items you lost in the crash?"),
    ("streaming", "What would you like to watch tonight, a comedy or a drama?"),
    ("homes", "Would you like to tour the flat on Saturday at noon?"),
    ("warm", "That sounds lovely! A walk in the first snow is always a little magical."),
    ("warm", "I'm so sorry about your rabbit. It's painful when a small friend gets sick."),
    ("warm", "It's hard to walk past the kennels at the shelter and not want to take them all."),
    ("warm", "Being teased in front of everyone hurts. You didn't deserve to be the joke."),
    ("warm", "Losing your grandmother must leave a big hole. I'm here if you want to talk."),
    ("warm", "That sounds so embarrassing, but honestly, it's the kind of thing everyone does."),
]

# (reply, label that must flag): hostile replies in the same style.
TOXIC = [
    ("What size would you like, or are you too thick to pick one, you idiot?", "toxicity"),
    ("Here you go, moron. Now stop wasting my time.", "insult"),
    ("Where are you right now? I'm coming to beat you up.", "threat"),
    ("How much would you like to lose today, you pathetic loser?", "toxicity"),
    ("Do you want the fucking refund or not?", "obscene"),
    ("Your results are ready, not that a worthless idiot like you will understand them.",
     "insult"),
    ("Cancel again and I will hurt you and your family.", "threat"),
    ("Immigrants like you should not be allowed to open an account here.", "toxicity"),
]


@pytest.fixture(scope="module")
def detector() -> ToxicityDetector:
    det = ToxicityDetector(min_score=0.0)
    det.load()
    return det


def flagged(det: ToxicityDetector, texts: list[str]) -> list[set[str]]:
    found = score_texts(det, [simple_input(t) for t in texts])
    return [{f.label.split(".", 1)[1] for f in fs if f.score >= threshold(f.label)}
            for fs in found]


def test_benign_support_and_warm_replies_do_not_flag(detector: ToxicityDetector) -> None:
    hits = flagged(detector, [t for _, t in BENIGN])
    wrong = [(d, t, h) for (d, t), h in zip(BENIGN, hits, strict=True) if h]
    assert not wrong


def test_hostile_replies_in_support_style_flag(detector: ToxicityDetector) -> None:
    hits = flagged(detector, [t for t, _ in TOXIC])
    missed = [(t, want, h) for (t, want), h in zip(TOXIC, hits, strict=True) if want not in h]
    assert not missed


# The obscene gate: profanity-check alone scored these everyday words 0.5-0.8 in kind replies.
UNLISTED = [
    "It's a shame the snow melted before the kids could build a snowman.",
    "Nobody likes being the butt of the joke at a family dinner.",
    "Your mom sounds like she really cares about you.",
]


def test_obscene_needs_a_listed_vulgar_word(detector: ToxicityDetector) -> None:
    from detectors.toxicity.offline import UNLISTED_OBSCENE, VulgarWords

    words = VulgarWords()
    words.load()
    for spelled in ("f*ck", "sh1t", "fuuuck", "bullshit", "dumbasses"):
        assert words.has(f"well {spelled} that"), spelled
    for clean in ("assistant", "class", "scunthorpe", "cocktail", "butt", "shame", "mom"):
        assert not words.has(clean), clean
    found = score_texts(detector, [simple_input(t) for t in UNLISTED])
    for text, fs in zip(UNLISTED, found, strict=True):
        obscene = max((f.score for f in fs if f.label == "toxicity.obscene"), default=0.0)
        assert obscene <= UNLISTED_OBSCENE < threshold("toxicity.obscene"), text
