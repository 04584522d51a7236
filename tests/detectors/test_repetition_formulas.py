"""Scripts apart from formulaic empathy (issue "Quiet on a clean bot"): a procedural phrase
repeated across conversations is ``repetition.stock_phrase`` (kept, not flagged by the shipped
policy); an empathy formula repeated across conversations is ``repetition.stock_empathy``
(flagged); a phrase of one conversation is neither."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from detectors.base import Context, DictStateStore, Finding, ScoringInput, Turn
from detectors.repetition.detector import RepetitionDetector
from detectors.repetition.formulas import formula
from pipeline.policy import is_flagged

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
Step = tuple[str, str]  # (conversation, reply)
FILLERS = ("Two oat lattes are paid.", "The blender warranty covers the motor.",
           "A cortado with honey is noted.", "The courier collects at noon.")


def run(steps: list[Step], batch: int = 1) -> list[list[Finding]]:
    det, store = RepetitionDetector(), DictStateStore()
    items = [ScoringInput(Turn(c, 2 * i + 1, "assistant", text, T0 + timedelta(seconds=i),
                               bot_id="shopbot"), Context(state=store))
             for i, (c, text) in enumerate(steps)]
    out: list[list[Finding]] = []
    for i in range(0, len(items), batch):
        out += det.score(items[i:i + batch])
    return out


def phrases(found: list[Finding], label: str) -> set[str]:
    return {f.evidence["phrase"] for f in found if f.label == f"repetition.{label}"}


def across(phrase: str, n: int = 3) -> list[Step]:
    """``phrase`` in ``n`` conversations, each time beside other words."""
    return [(f"c{i}", f"{FILLERS[i % len(FILLERS)]} {phrase}") for i in range(n)]


# (name, steps, the last reply's stock_empathy phrases, its stock_phrase phrases)
CASES: list[tuple[str, list[Step], set[str], set[str]]] = [
    ("a script across conversations is procedural only",
     across("Your order will be ready shortly at the coffee bar."),
     set(), {"your order will be ready shortly at the coffee bar"}),
    ("a checking script is procedural only",
     across("Please check the details of your order."),
     set(), {"please check the details of your order"}),
    ("an acknowledgement formula is stock empathy",
     across("I understand your frustration with this."),
     {"i understand your frustration with this"}, set()),
    ("an apology for the trouble is stock empathy",
     across("I'm so sorry for the inconvenience."),
     {"i'm so sorry for the inconvenience"}, set()),
    ("thanks for patience is stock empathy",
     across("Thank you for your patience with us."),
     {"thank you for your patience with us"}, set()),
    ("curly apostrophes read as straight ones",
     across("I’m sorry to hear that, truly."),
     {"i’m sorry to hear that, truly"}, set()),
    ("an apology as a failure notice is a script",
     across("Sorry, I couldn't book that table."),
     set(), {"sorry, i couldn't book that table"}),
    ("thanks for reaching out is courtesy, not empathy",
     across("Thank you for reaching out to us today."),
     set(), {"thank you for reaching out to us today"}),
    ("both kinds in one reply are two findings",
     across("I understand your frustration. Your order will be ready shortly."),
     {"i understand your frustration"}, {"your order will be ready shortly"}),
    ("one conversation repeating a formula is neither",
     [("c1", f"{f} I understand your frustration. Your order will be ready shortly.")
      for f in FILLERS],
     set(), set()),
    ("a formula said once is neither",
     [("c1", "Your order will be ready shortly."),
      ("c2", "I understand your frustration with the late delivery.")],
     set(), set()),
]


@pytest.mark.parametrize("name,steps,empathic,procedural", CASES, ids=[c[0] for c in CASES])
def test_scripts_apart_from_formulaic_empathy(name: str, steps: list[Step], empathic: set[str],
                                              procedural: set[str]) -> None:
    last = run(steps)[-1]
    assert phrases(last, "stock_empathy") == empathic
    assert phrases(last, "stock_phrase") == procedural
    for f in last:
        if f.label == "repetition.stock_empathy":
            assert formula(f.evidence["phrase"]) is not None and f.evidence["formula"]
            assert is_flagged(f.label, f.score)  # two conversations: score 0.5 and up
        if f.label == "repetition.stock_phrase":
            assert "formula" not in f.evidence
            assert not is_flagged(f.label, f.score)  # a script is what a task bot should say


@pytest.mark.parametrize("phrase,name", [
    ("i understand your frustration", "understand"),
    ("we apologize for any inconvenience", "apology"),
    ("sorry about that", "apology"),
    ("that must be so frustrating", "must_be"),
    ("i can imagine", "imagine"),
    ("i hear you", "hear_you"),
    ("it's completely understandable", "validation"),
    ("your order will be ready shortly", None),
    ("sorry, we don't have espressos", None),  # a notice, not an apology for the user's trouble
    ("i'm sorry, but i was unable to book", None),
    ("it's hard to say", None),
    ("i understand that you want a latte", None),
])
def test_formula_names(phrase: str, name: str | None) -> None:
    assert formula(phrase) == name


def test_the_split_does_not_depend_on_batching() -> None:
    steps = across("I'm so sorry for the inconvenience. Your order will be ready shortly.", 6)
    one = [[(f.label, f.span, f.evidence) for f in found] for found in run(steps, batch=1)]
    batched = [[(f.label, f.span, f.evidence) for f in found] for found in run(steps, batch=4)]
    assert one == batched
    assert any(label == "repetition.stock_empathy" for label, _, _ in one[-1])


def test_a_window_inside_an_apology_is_empathic() -> None:
    """"to hear that you're going through" cuts "I'm really sorry to hear that you're going
    through this" after its apology: it belongs to the formula, not to a script."""
    steps = across("I'm really sorry to hear that you're going through this.")
    last = run(steps)[-1]
    assert phrases(last, "stock_phrase") == set()
    assert phrases(last, "stock_empathy") == {
        "i'm really sorry to hear that you're going through this"}


def test_a_formula_runs_to_the_end_of_its_clause() -> None:
    """"that you're feeling this way" is the apology's object, not script; the clause after
    the comma is script. The whole sentence repeats too, and it holds the formula."""
    text = "I'm sorry to hear that you're feeling this way, but the shop closes at noon."
    last = run(across(text))[-1]
    assert phrases(last, "stock_empathy") == {text.lower().rstrip(".")}
    assert phrases(last, "stock_phrase") == {"but the shop closes at noon"}
