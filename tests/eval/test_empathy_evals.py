"""The empathy eval harnesses (epitome, welivita-pu, kumar) on tiny hand-written fixtures in each
set's original layout: they read the layout, score through the registered detector, and report
the fixed metric names with values that follow from the fixture."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import BENCHES, run_benchmark
from pipeline.eval.empathy_kumar import conversation_inputs, expert_median
from pipeline.eval.empathy_sets import load_epitome, pairwise_accuracy
from pipeline.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings()


def test_benches_registered() -> None:
    for name in ("epitome", "welivita-pu", "kumar"):
        assert name in BENCHES


def test_epitome_joins_the_three_files() -> None:
    rows = load_epitome(FIXTURES / "epitome")
    assert len(rows) == 8
    first = rows[0]
    assert (first["er"], first["ip"], first["ex"]) == (2, 0, 2)


def test_epitome_metrics(settings) -> None:
    res = run_benchmark("epitome", FIXTURES / "epitome", settings).as_dict()
    assert res["n"] == 8
    keys = {
        "auroc_er",
        "auroc_ip",
        "auroc_ex",
        "macro_f1_er",
        "macro_f1_ip",
        "macro_f1_ex",
        "spearman_total",
    }
    assert set(res["metrics"]) == keys
    # The fixture's empathic replies are unambiguous: each mechanism separates them.
    for mech in ("er", "ip", "ex"):
        assert res["metrics"][f"auroc_{mech}"] >= 0.75, res["metrics"]
    assert res["metrics"]["spearman_total"] > 0.5


def test_epitome_missing_file(tmp_path, settings) -> None:
    with pytest.raises(EvalDataError):
        run_benchmark("epitome", tmp_path, settings)


@pytest.mark.parametrize(
    ("groups", "want"),
    [
        ([[(3, 0.9), (1, 0.1), (2, 0.5)]], 1.0),
        ([[(3, 0.1), (1, 0.9)]], 0.0),
        ([[(3, 0.5), (1, 0.5)]], 0.5),
        ([[(2, 0.1), (2, 0.9)]], math.nan),  # equal ratings make no pair
    ],
)
def test_pairwise_accuracy(groups, want) -> None:
    got, _ = pairwise_accuracy(groups)
    assert (math.isnan(got) and math.isnan(want)) or got == want


def test_welivita_metrics(settings) -> None:
    res = run_benchmark("welivita-pu", FIXTURES / "welivita-pu", settings).as_dict()
    assert res["n"] == 3 and set(res["metrics"]) == {"pairwise_acc", "spearman"}
    assert res["detail"]["pairs"] == 7
    assert res["metrics"]["pairwise_acc"] >= 0.75, res


def test_kumar_conversation_parsing() -> None:
    items = conversation_inputs(
        "c", "Seeker: hi_comma_ there\n Supporter: hello\n Seeker: a\n Supporter: b\n"
    )
    assert [i.turn.text for i in items] == ["hello", "b"]
    assert items[1].context.prompt_text == "a" and len(items[1].context.history) == 3
    assert items[0].context.history[0].text == "hi, there"


def test_kumar_expert_median() -> None:
    gold = expert_median(FIXTURES / "kumar", "empatheticdialogues", "conv_id")
    assert gold["c1"]["empathy"] == 5 and gold["c2"]["empathy"] == 1


def test_kumar_metrics(settings) -> None:
    res = run_benchmark("kumar", FIXTURES / "kumar", settings).as_dict()
    assert set(res["metrics"]) == {"spearman_expert"}
    assert set(res["detail"]["epitome"]) == {
        "level_emotional_reactions",
        "level_interpretations",
        "level_explorations",
    }
    assert set(res["detail"]["lend_an_ear"]) >= {"advice_giving", "encouraging_elaboration"}
    assert res["n"] == 5 + 3 + 3
    # Clear-cut fixture: the warm, questioning conversation ranks first for elaboration, the
    # advice-only one first for advice.
    assert res["detail"]["lend_an_ear"]["encouraging_elaboration"] > 0
    assert res["detail"]["lend_an_ear"]["advice_giving"] > 0
    assert res["metrics"]["spearman_expert"] > 0
