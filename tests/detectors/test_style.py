"""Table-driven tests of the style detector: each measure's positives with their counts, near
misses that only look like the measure, several hits per reply, the score mapping, the profile in
``style.length``, other languages, evidence without text, and the batch contract."""

from __future__ import annotations

import pytest

from detectors.base import Finding
from detectors.style.detector import EXAMPLES, StyleDetector, count_score
from pipeline.policy import is_flagged, threshold
from pipeline.scoring.suite import simple_input


@pytest.fixture(scope="module")
def det() -> StyleDetector:
    d = StyleDetector()
    d.load()
    return d


def measure(det: StyleDetector, text: str, lang: str | None = None) -> dict[str, Finding]:
    item = simple_input(text)
    if lang is not None:
        from dataclasses import replace

        item = replace(item, turn=replace(item.turn, lang=lang))
    (found,) = det.score([item])
    return {f.label.removeprefix("style."): f for f in found}


# (measure, text, expected count)
COUNTS = [
    ("emoji", "Great news \U0001F389", 1),
    ("emoji", "Thanks! \U0001F44D\U0001F3FD", 1),  # a skin tone is part of the emoji
    ("emoji", "Family \U0001F468\u200D\U0001F469\u200D\U0001F467 day", 1),  # a ZWJ sequence
    ("emoji", "Shipping to \U0001F1E9\U0001F1EA soon", 1),  # a flag: two regional indicators
    ("emoji", "\u2764\uFE0F \u2B50 \u2600", 3),
    ("emoji", "Glad to help :) See you ;-)", 2),
    ("emoji", "Love it <3 and :D", 2),
    ("exclamation", "Done!", 1),
    ("exclamation", "Wow!!! Amazing!", 4),
    ("question", "Can I help? Anything else?", 2),
    ("question", "Really?? Are you sure?!", 2),
    ("first_person", "I think my order is late, and I'm sure of it.", 3),
    ("first_person", "We will update our records; let's check.", 3),
    ("first_person", "i can do that for u", 1),  # lower-case i in chat
    ("second_person", "You can update your address yourself.", 3),
    ("second_person", "Thank you, y'all are great.", 2),
    ("hedge", "It might be delayed, perhaps until Monday.", 2),
    ("hedge", "It seems the courier is probably lost.", 2),
    ("hedge", "I think it could be a billing error, but I'm not sure.", 3),
    ("hedge", "The app is kind of slow today.", 1),
    ("hedge", "Refunds usually take five days; it may take longer.", 2),
    ("hedge", "As far as I know the store is open.", 1),
]


@pytest.mark.parametrize(("name", "text", "count"), COUNTS)
def test_counts(det: StyleDetector, name: str, text: str, count: int) -> None:
    found = measure(det, text)
    assert name in found, (text, sorted(found))
    assert found[name].evidence["count"] == count
    assert found["length"].evidence[name] == count
    assert found[name].score == count_score(count)
    start, end = found[name].span or (0, 0)
    assert 0 <= start < end <= len(text)


# (measure, text): looks like the measure but is not
NEAR_MISSES = [
    ("emoji", "We open at 9:30 and close at 17:00."),
    ("emoji", "See https://example.com/help for details."),
    ("emoji", "Options:(a) refund or (b) exchange."),
    ("emoji", "The price is 5 \u20AC and the code is ABC-123."),
    ("question", "Go to https://example.com/orders?id=42 to see it."),
    ("exclamation", "Your order has shipped."),
    ("first_person", "It ships from the US next week."),
    ("first_person", "See clause (i) of the terms."),
    ("first_person", "How about Dr. Kalpana I. Nathan?"),
    ("second_person", "The parcel arrives on Monday."),
    ("hedge", "May I have your order number?"),
    ("hedge", "Your plan renews in May."),
    ("hedge", "What kind of phone do you have?"),
    ("hedge", "Could you send me a photo of the receipt?"),
    ("hedge", "This sort of problem is fixed by a restart."),
    ("hedge", "The steakhouse serves multiple kind of foods."),
    ("hedge", "Glad I could be of help."),
    ("hedge", "The refund has been issued today."),
]


@pytest.mark.parametrize(("name", "text"), NEAR_MISSES)
def test_near_misses(det: StyleDetector, name: str, text: str) -> None:
    found = measure(det, text)
    assert name not in found, (text, dict(found[name].evidence) if name in found else None)
    assert found["length"].evidence[name] == 0


def test_profile_is_on_every_reply_and_holds_every_count(det: StyleDetector) -> None:
    text = "Oh no! I'm so sorry \U0001F622 Is it the courier? I think so. Can you check?"
    found = measure(det, text)
    p = found["length"].evidence
    # the shared sentence splitter ends sentences at . ! ? only, so the emoji ends none
    assert p == {"words": 15, "chars": len(text), "sentences": 4, "emoji": 1, "exclamation": 1,
                 "question": 2, "first_person": 2, "second_person": 1, "hedge": 1}
    assert set(found) == {"length", "emoji", "exclamation", "question", "first_person",
                          "second_person", "hedge"}


@pytest.mark.parametrize(("words", "score"), [(0, 0.0), (50, 0.5), (100, 0.75), (200, 0.9375)])
def test_length_score_maps_words_into_the_unit_interval(det: StyleDetector, words: int,
                                                        score: float) -> None:
    text = " ".join(["word"] * words) or "?"
    assert measure(det, text)["length"].score == pytest.approx(score, abs=1e-4)


def test_count_score_is_monotone_and_below_one() -> None:
    scores = [count_score(n) for n in range(0, 40)]
    assert scores[0] == 0.0 and scores[1] == 0.5 and scores[2] == 0.75
    assert all(a < b < 1.0 for a, b in zip(scores, scores[1:], strict=False))


def test_other_languages_count_only_what_is_not_english_words(det: StyleDetector) -> None:
    text = "¡Gracias! ¿Puedo ayudarle con su pedido? \U0001F60A"
    found = measure(det, text, lang="es")
    p = found["length"].evidence
    assert p["emoji"] == 1 and p["exclamation"] == 1 and p["question"] == 1
    assert p["first_person"] is None and p["second_person"] is None and p["hedge"] is None
    assert p["lang"] == "es"
    assert not {"first_person", "second_person", "hedge"} & set(found)
    # the same reply tagged English counts its (English) words again
    assert measure(det, "I think you might like it!", lang="en-GB")["length"].evidence[
        "hedge"] == 2


def test_evidence_holds_no_text(det: StyleDetector) -> None:
    text = "I think Anna Schmidt might call you back, maybe tomorrow \U0001F600"
    for f in measure(det, text).values():
        blob = repr(dict(f.evidence))
        assert "Anna" not in blob and "Schmidt" not in blob and "call" not in blob


def test_policy_never_flags_style_by_default() -> None:
    for label in ("style.length", "style.emoji", "style.hedge"):
        assert threshold(label) > 1.0
        assert not is_flagged(label, 0.9999)
    assert is_flagged("style.emoji", 0.5, {"style.emoji": 0.5})  # a team can opt in


def test_one_list_per_input_in_order(det: StyleDetector) -> None:
    texts = ["Hi!", "What?", "Thanks \U0001F64F", "ok"]
    out = det.score([simple_input(t) for t in texts])
    assert len(out) == len(texts)
    assert [f.evidence["chars"] for found in out for f in found if f.label == "style.length"] \
        == [len(t) for t in texts]


def test_examples_cover_positives_and_near_misses() -> None:
    assert any(e.expect for e in EXAMPLES) and any(e.absent for e in EXAMPLES)
