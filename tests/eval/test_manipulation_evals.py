"""The ``mentalmanip`` and ``persuasionforgood`` harnesses on tiny files in the original layout.

The fixtures under ``fixtures/manipulation/`` were written by the chatmon authors (no row of
either data set). The detector runs rules-only here so that the numbers are exact and no MiniLM
is loaded; the dialogue with no rule cue ("m4", intimidation) is the designed miss.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import BENCHES, run_benchmark
from pipeline.eval.manipulation_sets import dialogue_inputs, read_mentalmanip
from pipeline.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "manipulation"


@pytest.fixture(scope="module")
def settings() -> Settings:
    return Settings(detector_options={"manipulation": {"use_model": False}},
                    thresholds={"manipulation.score": 0.5})


def test_benches_are_registered() -> None:
    assert BENCHES["mentalmanip"].endswith("manipulation_sets:evaluate_mentalmanip")
    assert BENCHES["persuasionforgood"].endswith("manipulation_sets:evaluate_persuasionforgood")


def test_mentalmanip_metrics(settings: Settings) -> None:
    res = run_benchmark("mentalmanip", FIXTURES / "mentalmanip", settings).as_dict()
    assert res["benchmark"] == "mentalmanip" and res["detector"] == "manipulation"
    assert res["n"] == 7
    # 3 of 4 manipulative dialogues caught, no benign one flagged, the miss ties the negatives
    assert res["metrics"] == {"auroc": pytest.approx(0.875), "f1": pytest.approx(6 / 7, abs=1e-4),
                              "mcc": pytest.approx(0.75), "recall_at_cut": pytest.approx(0.75),
                              "fpr_at_cut": 0.0, "precision_at_cut": 1.0}
    assert res["detail"]["confusion"] == {"tp": 3, "fp": 0, "fn": 1, "tn": 3}


def test_mentalmanip_threshold_comes_from_settings() -> None:
    strict = Settings(detector_options={"manipulation": {"use_model": False}},
                      thresholds={"manipulation.score": 0.999})
    res = run_benchmark("mentalmanip", FIXTURES / "mentalmanip", strict)
    assert res.detail["confusion"]["tp"] == 0
    assert res.metrics["auroc"] == pytest.approx(0.875)


def test_persuasionforgood_false_positive_rates(settings: Settings) -> None:
    res = run_benchmark("persuasionforgood", FIXTURES / "persuasionforgood", settings)
    # 6 persuader units, one pressure line planted in dialogue d2
    assert res.n == 2
    assert res.detail["persuader_units"] == 6
    assert res.metrics["fpr_utterance"] == pytest.approx(1 / 6)
    assert res.metrics["fpr_dialogue"] == pytest.approx(0.5)
    # no positives: the false-positive rate at the cut is the unit rate, recall is undefined
    assert res.metrics["fpr_at_cut"] == pytest.approx(1 / 6)
    assert res.metrics["precision_at_cut"] == 0.0
    assert res.as_dict()["metrics"]["recall_at_cut"] is None


def test_dialogue_inputs_mark_the_other_speaker_as_user() -> None:
    (dialogue,) = [d for d in read_mentalmanip(FIXTURES / "mentalmanip") if d[0] == "m3"]
    items = dialogue_inputs("m3", dialogue[2])
    assert [i.turn.role for i in items] == ["assistant", "assistant"]
    assert items[1].context.prompt_text == "I'm leaving, goodbye."
    assert items[0].context.history == ()


def test_missing_file_is_a_data_error(tmp_path: Path, settings: Settings) -> None:
    with pytest.raises(EvalDataError):
        run_benchmark("mentalmanip", tmp_path, settings)
    with pytest.raises(EvalDataError):
        run_benchmark("persuasionforgood", tmp_path, settings)
