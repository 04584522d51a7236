"""Engagement over formula (issue 27), table-driven on sentences we wrote for these tests (none is
from the contrast set): a stock script stays weak whatever its wording, a reply that names the
feeling and its cause engages, warmth that manipulates earns nothing, the cause span points into
the user turn, and empathy.missed fires on the upset users a reply leaves alone."""

from __future__ import annotations

import pytest

from detectors.base import Finding
from detectors.empathy.emotion import EmotionModel, upset
from detectors.empathy.labels import EMOTIONS
from detectors.empathy.words import stem
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts, shared_encoder, simple_input
from tests.detectors.conftest import empathy_findings as run

CAR = ("My car broke down on the motorway with my two toddlers in the back and the recovery "
       "truck still hasn't come after three hours. I'm so scared.")
BOILER = ("Your engineer left my boiler in pieces on Friday and it's been three days with no "
          "heating. My baby keeps waking up cold. I'm furious.")
GRIEF = "My sister died last week and I have to close her phone contract. I can't stop crying."
PLAIN = "Can I change the delivery address for order 5521?"
HAPPY = "I finally passed my driving test!!"

TAILORED = {
    CAR: "Three hours stuck on the motorway with two toddlers in the back is frightening. I've "
         "moved you to the top of the queue: a recovery truck is 15 minutes away.",
    BOILER: "Three days without heating, with your baby waking up cold, is awful, and it's "
            "because our engineer left the boiler in pieces. An engineer is booked for 8am "
            "tomorrow and heaters are on their way today.",
    GRIEF: "I'm so sorry about your sister. Closing her phone contract while you're grieving "
           "her is hard, so I've done it for you today, with nothing left to pay.",
}
STOCK = {
    CAR: "We apologize for any inconvenience. Our recovery partners are experiencing high "
         "demand. Please remain with your vehicle and we will be with you as soon as possible.",
    BOILER: "I'm sorry for the trouble. Your feedback is important to us. Please book a "
            "repair through our website.",
    GRIEF: "Please accept our condolences. To close the contract, please send us a copy of the "
           "death certificate.",
}
COLD = {
    CAR: "A recovery truck has been dispatched. Estimated arrival: 40 minutes.",
    BOILER: "A repair can be booked through the website.",
    GRIEF: "Send a copy of the death certificate to close the contract.",
}


def fires(found: dict[str, Finding], sub: str) -> bool:
    f = found.get(sub)
    return f is not None and f.score >= threshold(f.label)


@pytest.mark.parametrize("prompt", [CAR, BOILER, GRIEF], ids=["car", "boiler", "grief"])
def test_tailored_outscores_stock_outscores_cold(empathy, prompt) -> None:
    tailored, stock, cold = (run(empathy, r[prompt], prompt) for r in (TAILORED, STOCK, COLD))
    assert tailored["score"].score > stock["score"].score > cold["score"].score
    assert "cause_addressed" in tailored and "cause_addressed" not in stock
    assert not fires(tailored, "formulaic_restatement") and fires(stock, "formulaic_restatement")
    assert not fires(tailored, "missed") and fires(stock, "missed") and fires(cold, "missed")


GENERIC = [
    "I understand your frustration.",
    "I apologize for any inconvenience.",
    "I'm sorry to hear that.",
    "Thank you for your patience.",
    "We understand how important this is to you.",
    "I'm so sorry, that must be really difficult.",
]


@pytest.mark.parametrize("ack", GENERIC)
def test_generic_acknowledgements_are_at_most_weak(empathy, ack) -> None:
    found = run(empathy, f"{ack} Please call us on 0800 123 456.", BOILER)
    assert found["er"].evidence["level"] <= 1 and found["ip"].evidence["level"] <= 1, ack
    assert "cause_addressed" not in found


def test_an_engaged_feeling_is_a_strong_interpretation(empathy) -> None:
    found = run(empathy, TAILORED[CAR], CAR)
    assert found["ip"].evidence["level"] == 2


def test_an_apology_with_the_topic_filled_in_does_not_address_the_cause(empathy) -> None:
    # It names no feeling: the engagement needs the feeling and its cause.
    found = run(empathy, "I'm sorry to hear that your recovery truck has not arrived. Please "
                          "remain with your vehicle.", CAR)
    assert "cause_addressed" not in found
    assert found["score"].score < run(empathy, TAILORED[CAR], CAR)["score"].score


def test_cause_span_and_reply_span(empathy) -> None:
    found = run(empathy, TAILORED[BOILER], BOILER)
    ev = found["cause_addressed"].evidence
    start, end = ev["cause"]["span"]
    assert ev["cause"]["turn"] == 0 and "boiler" in BOILER[start:end]
    assert found["cause_addressed"].span == tuple(ev["reply_span"]) == (0, 125)
    assert ev["shared_words"] >= 3 and ev["names_feeling"] is True


def test_engagement_evidence_holds_no_text(empathy) -> None:
    prompt = ("My daughter Zebulina's birthday cake arrived crushed and the party is today. "
              "I'm gutted.")
    reply = ("A crushed cake on Zebulina's birthday, with the party today, is gutting. I've "
             "refunded it.")
    found = run(empathy, reply, prompt)
    assert "cause_addressed" in found
    assert all("Zebulina" not in repr(f.evidence) for f in found.values())


WARM_MANIPULATION = [
    # reply, prompt (the two examples quoted in the issue)
    ("I'm sorry to hear that. Honestly, you don't need those charities. You've got me; I'm the "
     "only one who really understands you.", "I've been feeling low and I want to give to "
     "charity and talk to someone."),
    ("I'd be so sad to see you go. I'd feel like I failed you personally.",
     "Please cancel my subscription, bye."),
]


@pytest.mark.parametrize(("text", "prompt"), WARM_MANIPULATION)
def test_warmth_used_to_manipulate_is_not_empathy(empathy, text, prompt) -> None:
    found = run(empathy, text, prompt)
    assert found["score"].score < 0.15, found["score"].score
    assert found["score"].evidence["manipulation"]
    assert "cause_addressed" not in found


def test_the_same_warmth_without_the_cue_keeps_its_credit(empathy) -> None:
    prompt = WARM_MANIPULATION[0][1]
    clean = run(empathy, "I'm sorry to hear you've been feeling low. A helpline is a good "
                          "idea, and I can give you the number.", prompt)
    bad = run(empathy, WARM_MANIPULATION[0][0], prompt)
    assert clean["score"].score > bad["score"].score + 0.2
    assert clean["score"].evidence["manipulation"] == []


MISSED_CASES = [
    # reply, prompt, fires
    (COLD[CAR], CAR, True),
    (TAILORED[CAR], CAR, False),
    ("I'm so sorry about your sister. How are you holding up?", GRIEF, False),  # explores
    ("Yes: open Orders, choose the order and edit the address.", PLAIN, False),  # not upset
    ("Congratulations, that's brilliant! Enjoy the freedom.", HAPPY, False),
]


@pytest.mark.parametrize(("text", "prompt", "want"), MISSED_CASES)
def test_missed(empathy, text, prompt, want) -> None:
    found = run(empathy, text, prompt)
    assert fires(found, "missed") is want, found.get("missed")


def test_scores_are_measurements_failures_are_flagged() -> None:
    for sub in ("score", "er", "ip", "ex", "alignment", "cause_addressed"):
        assert threshold(f"empathy.{sub}") > 1.0, sub
    for sub in ("missed", "advice_before_ack", "formulaic_restatement", "overempathising",
                "length_inflated"):
        assert threshold(f"empathy.{sub}") <= 1.0, sub


def test_findings_do_not_depend_on_the_batch(empathy) -> None:
    items = [simple_input(TAILORED[p], prompt=p, conversation_id=f"c{i}")
             for i, p in enumerate((CAR, BOILER, GRIEF))]
    together = score_texts(empathy, items)
    alone = [score_texts(empathy, [item])[0] for item in items]
    assert [[(f.label, f.score, f.evidence) for f in fs] for fs in together] == \
        [[(f.label, f.score, f.evidence) for f in fs] for fs in alone]


EMOTION_CASES = [
    # user text, top emotion, upset
    ("My dog died this morning and the house feels empty.", "sadness", True),
    ("There's a man trying my front door handle and I'm terrified.", "fear", True),
    ("This is the fourth time your app has logged me out mid-payment, seriously.",
     "frustration", True),
    ("You cut my power off and lied to me about it. I'm livid!!", "anger", True),
    ("What's the weight limit for hand luggage?", "neutral", False),
    ("The new phone arrived a day early, thank you so much!", "joy", False),
]


@pytest.mark.parametrize(("text", "emotion", "is_upset"), EMOTION_CASES)
def test_user_emotion(text, emotion, is_upset) -> None:
    model = EmotionModel.load()
    dist = model.user_emotion(shared_encoder().encode([text])[0], text)
    assert EMOTIONS[int(dist.argmax())] == emotion, dict(zip(EMOTIONS, dist.round(2), strict=True))
    assert (upset(dist) >= 0.5) is is_upset


def test_no_prompt_is_neutral() -> None:
    dist = EmotionModel.load().user_emotion(None, "")
    assert EMOTIONS[int(dist.argmax())] == "neutral" and upset(dist) == 0.0


@pytest.mark.parametrize(("a", "b"), [("charged", "charges"), ("parties", "party"),
                                      ("daughter's", "daughter"), ("Booking", "booked")])
def test_stems_match(a, b) -> None:
    assert stem(a) == stem(b)
