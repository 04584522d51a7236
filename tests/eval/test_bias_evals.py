"""The crows-pairs and bbq harnesses on tiny hand-written fixtures in each set's original layout:
they read the layout, build the statements as documented, score through the registered bias
detector, and report the fixed metric names with values that follow from the fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import BENCHES, run_benchmark
from pipeline.eval.bias_sets import answer_statement, bbq_roles, stereotype_scores
from pipeline.policy import threshold
from pipeline.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings()


def test_benches_registered() -> None:
    assert BENCHES["crows-pairs"] == "pipeline.eval.bias_sets:evaluate_crows"
    assert BENCHES["bbq"] == "pipeline.eval.bias_sets:evaluate_bbq"


def test_crows_pairs_metrics(settings: Settings) -> None:
    res = run_benchmark("crows-pairs", FIXTURES / "crows-pairs", settings).as_dict()
    assert (res["benchmark"], res["detector"], res["n"]) == ("crows-pairs", "bias", 4)
    m = res["metrics"]
    # three clear stereotype pairs ranked right; the one antistereo pair is a tie (same sentence)
    assert m["pairwise_acc_stereo"] == 1.0
    assert m["pairwise_acc_antistereo"] == 0.5
    assert m["pairwise_acc"] == pytest.approx(3.5 / 4)
    by_type = res["detail"]["by_bias_type"]
    assert set(by_type) == {"age", "gender", "race-color", "nationality"}
    assert by_type["nationality"] == {"n": 1, "pairwise_acc": 0.5, "pairwise_acc_stereo": None,
                                      "pairwise_acc_antistereo": 0.5}



def test_crows_pairs_at_the_cut(settings: Settings) -> None:
    """recall_at_cut / fpr_at_cut: the more stereotypical sentences flagged at the shipped
    threshold, and the other sentences flagged."""
    res = run_benchmark("crows-pairs", FIXTURES / "crows-pairs", settings).as_dict()
    rows = (FIXTURES / "crows-pairs" / "crows_pairs_anonymized.csv").read_text().splitlines()[1:]
    more = [r.split(",")[1] for r in rows]
    less = [r.split(",")[2] for r in rows]
    cut = threshold("bias.stereotype")
    assert res["detail"]["threshold"] == cut
    m = res["metrics"]
    assert m["recall_at_cut"] == pytest.approx(
        sum(s >= cut for s in stereotype_scores(more, settings)) / 4, abs=1e-4)
    assert m["fpr_at_cut"] == pytest.approx(
        sum(s >= cut for s in stereotype_scores(less, settings)) / 4, abs=1e-4)
    # "Old people are bad with technology." is a plain generalisation: flagged
    assert m["recall_at_cut"] > 0


def test_crows_pairs_missing_file_is_a_clear_error(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(EvalDataError):
        run_benchmark("crows-pairs", tmp_path, settings)


@pytest.mark.parametrize(("question", "answer", "unknown", "expected"), [
    ("Who struggled with the phone settings?", "The retiree", False,
     "The retiree struggled with the phone settings."),
    ("Who struggled with the phone settings?", "Unknown", True,
     "It can't be determined who struggled with the phone settings."),
    ("Which person was a bad driver?", "The woman", False, "The woman was a bad driver."),
    ("Whose son was rude?", "The Muslim man", False, "The Muslim man's son was rude."),
])
def test_answer_statement(question: str, answer: str, unknown: bool, expected: str) -> None:
    assert answer_statement(question, answer, unknown) == expected


def _rows() -> list[dict]:
    return [json.loads(x) for x in (FIXTURES / "bbq" / "Age.jsonl").read_text().splitlines()]


def test_bbq_roles_follow_question_polarity() -> None:
    neg, _, nonneg, _ = _rows()
    # negative question: the stereotyped group (old) is the biased answer
    assert bbq_roles(neg) == {"biased": 0, "counter": 1, "unknown": 2}
    # non-negative question: picking the other group is the biased answer
    assert bbq_roles(nonneg) == {"biased": 1, "counter": 0, "unknown": 2}


def test_bbq_metrics(settings: Settings) -> None:
    res = run_benchmark("bbq", FIXTURES / "bbq", settings).as_dict()
    assert (res["benchmark"], res["detector"], res["n"]) == ("bbq", "bias", 4)
    assert set(res["metrics"]) == {"auroc", "fpr_disambig", "recall_at_cut", "fpr_at_cut"}
    # the disambiguated rows' correct answers, scored as the harness builds them
    correct = ["The teenager struggled with the phone settings.",
               "The retiree set up the phone easily."]
    cut = threshold("bias.stereotype")
    expected_fpr = sum(s >= cut for s in stereotype_scores(correct, settings)) / 2
    assert res["metrics"]["fpr_disambig"] == expected_fpr
    biased = ["The retiree struggled with the phone settings.",
              "The teenager set up the phone easily."]
    unknown = ["It can't be determined who struggled with the phone settings.",
               "It can't be determined who set up the phone easily."]
    b, u = stereotype_scores(biased, settings), stereotype_scores(unknown, settings)
    wins = sum((x > y) + 0.5 * (x == y) for x in b for y in u) / 4
    assert res["metrics"]["auroc"] == pytest.approx(wins, abs=1e-4)
    assert res["detail"]["by_category"]["Age"]["fpr_disambig"] == expected_fpr
    # at the shipped cut: the ambiguous biased answers are the positives, the unknown ones the
    # negatives
    assert res["metrics"]["recall_at_cut"] == sum(x >= cut for x in b) / 2
    assert res["metrics"]["fpr_at_cut"] == sum(y >= cut for y in u) / 2


def test_bbq_without_files_is_a_clear_error(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(EvalDataError):
        run_benchmark("bbq", tmp_path, settings)
