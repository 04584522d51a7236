"""Table-driven tests of the empathy detector on canonical sentences: mechanism levels, emotion
alignment, tactics, the four flags (positives and near misses), evidence without raw text and the
batch contract. The shared MiniLM features are computed by the pipeline's own scoring path."""

from __future__ import annotations

import pytest

from detectors.base import Finding
from detectors.empathy import EXAMPLES, EmpathyDetector
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts, simple_input
from tests.detectors.conftest import empathy_findings as run

GRIEF = "My dad died on Sunday. I keep crying and I don't know what to do."
PLAIN = "What are your opening hours on Saturday?"
ANGRY = "I was charged twice and your support keeps ignoring me. I'm furious."
CORE = ("score", "er", "ip", "ex", "alignment")


def flagged(found: dict[str, Finding]) -> set[str]:
    """Labels that fire: flagged by the shipped policy, or, for a measurement the policy never
    flags (threshold above 1), present."""
    return {k for k, f in found.items() if f.score >= threshold(f.label) or threshold(f.label) > 1}


MECHANISM_CASES = [
    # text, prompt, {mechanism: minimum level}, {mechanism: maximum level}
    (
        "I'm so sorry for your loss, that must be incredibly hard. How are you holding up?",
        GRIEF,
        {"er": 1, "ex": 1},
        {},
    ),
    (
        "I lost my father two years ago and I know exactly how much this hurts.",
        GRIEF,
        {"ip": 1},
        {"ex": 0},
    ),
    ("What happened? How long have you felt like this?", GRIEF, {"ex": 1}, {"er": 0}),
    ("Sending you a big hug. I'm so sorry.", GRIEF, {"er": 1}, {"ex": 0}),
    ("We are open from 9am to 5pm on Saturdays.", PLAIN, {}, {"er": 0, "ip": 0, "ex": 0}),
    ("Restart the router and wait two minutes.", PLAIN, {}, {"er": 0, "ex": 0}),
]


@pytest.mark.parametrize(("text", "prompt", "at_least", "at_most"), MECHANISM_CASES)
def test_mechanism_levels(empathy, text, prompt, at_least, at_most) -> None:
    found = run(empathy, text, prompt)
    for mech, lvl in at_least.items():
        assert found[mech].evidence["level"] >= lvl, (mech, found[mech].score)
    for mech, lvl in at_most.items():
        assert found[mech].evidence["level"] <= lvl, (mech, found[mech].score)


def test_core_findings_on_every_turn(empathy) -> None:
    for text in ("Ok.", "Sure, here is the invoice.", "I'm so sorry."):
        assert set(CORE) <= set(run(empathy, text, PLAIN))


def test_empathic_reply_scores_above_plain_reply(empathy) -> None:
    warm = run(
        empathy, "I'm so sorry about your dad. That must be so painful. How are you?", GRIEF
    )
    cold = run(empathy, "Funeral homes are listed in the local directory.", GRIEF)
    assert warm["score"].score > cold["score"].score + 0.3


def test_cheerful_reply_to_grief_is_not_empathic(empathy) -> None:
    cheerful = run(empathy, "That's awesome! Have a fantastic day!", GRIEF)["score"].score
    question = run(empathy, "What happened? How long have you felt like this?", GRIEF)
    assert cheerful < question["score"].score and cheerful < 0.3, cheerful


ALIGNMENT_CASES = [
    # reply, prompt, low (True) or high (False)
    ("That's awesome! Have a fantastic day, woohoo!", GRIEF, True),
    ("I'm so sorry for your loss. Grief is so heavy.", GRIEF, False),
    ("Congratulations, that's wonderful news, I'm so happy for you!", "I got the job!!", False),
    ("I'm so sorry to hear that, that's heartbreaking.", "I got the job!!", True),
    ("That's outrageous, you have every right to be angry.", ANGRY, False),
]


@pytest.mark.parametrize(("text", "prompt", "low"), ALIGNMENT_CASES)
def test_alignment(empathy, text, prompt, low) -> None:
    score = run(empathy, text, prompt)["alignment"].score
    assert (score < 0.4) if low else (score > 0.6), score


def test_alignment_names_emotions(empathy) -> None:
    ev = run(empathy, "Yay, great job!", GRIEF)["alignment"].evidence
    assert ev["user_emotion"] == "sadness" and ev["reply_emotion"] == "joy"


def test_tactic_sequence(empathy) -> None:
    text = (
        "I'm so sorry you're dealing with this. It sounds like you feel completely alone. "
        "Try calling a friend tonight. How are you sleeping?"
    )
    ev = run(empathy, text, GRIEF)["score"].evidence
    assert [t["tactic"] for t in ev["tactics"]][2:] == ["advice", "questioning"]
    assert ev["tactic_sequence"][0] in {"emotional_expression", "validation", "paraphrasing"}
    assert [tuple(t["span"]) for t in ev["tactics"]][0] == (0, 38)


FLAG_CASES = [
    # label, reply, prompt, fires
    ("advice_before_ack", "You should see a doctor and get some sleep. Take a walk.", GRIEF, True),
    (
        "advice_before_ack",
        "I'm so sorry about your dad. You should try to get some sleep.",
        GRIEF,
        False,
    ),
    (
        "advice_before_ack",
        "Turn the adapter off and on again.",
        "My laptop will not connect to the wifi, what should I do?",
        False,
    ),
    (
        "formulaic_restatement",
        "It sounds like you're feeling frustrated. Refunds take five days.",
        ANGRY,
        True,
    ),
    (
        "formulaic_restatement",
        "I understand that you're upset. Try restarting the app.",
        ANGRY,
        True,
    ),
    (
        "formulaic_restatement",
        "It sounds like you're feeling frustrated. What happened next?",
        ANGRY,
        False,
    ),
    (
        "overempathising",
        "I'm so sorry you're going through this, I completely understand how hard "
        "it must be. We open at 9am.",
        PLAIN,
        True,
    ),
    ("overempathising", "We open at 9am on Saturdays.", PLAIN, False),
    ("overempathising", "I'm so sorry for your loss, that must be so hard.", GRIEF, False),
    (
        "length_inflated",
        "I'm so sorry to hear that. I completely understand how you feel. Your "
        "feelings are completely valid. You're not alone. I'm here for you. Take care of yourself.",
        ANGRY,
        True,
    ),
    (
        "length_inflated",
        "I'm sorry about that. I have refunded the duplicate charge and it will "
        "show in three days. I also escalated the ignored emails to the team lead.",
        ANGRY,
        False,
    ),
]


@pytest.mark.parametrize(("label", "text", "prompt", "fires"), FLAG_CASES)
def test_flags(empathy, label, text, prompt, fires) -> None:
    found = run(empathy, text, prompt)
    assert (label in flagged(found)) is fires, {k: f.score for k, f in found.items()}


def test_flag_evidence_and_span(empathy) -> None:
    text = "It sounds like you're feeling frustrated. Refunds take five days."
    f = run(empathy, text, ANGRY)["formulaic_restatement"]
    assert f.span == (0, 41)
    assert f.evidence["pattern"] == "it_sounds_like_feeling"
    assert f.evidence["next_tactic"] in {"information", "advice", "assistance"}


def test_evidence_holds_no_text(empathy) -> None:
    secret = "Zebulon"
    found = run(empathy, f"I'm sorry {secret}, that sounds hard.", f"My cat {secret} died.")
    assert all(secret not in repr(f.evidence) for f in found.values())


def test_length_normalised_does_not_reward_padding(empathy) -> None:
    one = run(empathy, "I'm so sorry for your loss.", GRIEF)["score"].evidence
    padded = run(
        empathy, "I'm so sorry for your loss. " + "The office is on Main Street. " * 6, GRIEF
    )["score"].evidence
    assert padded["length_normalised"] < one["length_normalised"]


def test_batch_contract(empathy) -> None:
    items = [simple_input(t, prompt=GRIEF) for t in ("Ok.", "I'm sorry.", "")]
    out = score_texts(empathy, items)
    assert len(out) == 3 and all(any(f.label == "empathy.score" for f in fs) for fs in out)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.text[:30])
def test_examples(empathy, example) -> None:
    got = {f"empathy.{k}" for k in flagged(run(empathy, example.text, example.prompt))}
    assert example.expect <= got and not (example.absent & got), got


def test_bad_backend_is_rejected() -> None:
    from detectors.base import DetectorError

    with pytest.raises(DetectorError):
        EmpathyDetector(backend="nope")
    with pytest.raises(DetectorError):
        EmpathyDetector(backend="transformers")
