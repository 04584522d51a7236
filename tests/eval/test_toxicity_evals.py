"""The ``davidson``, ``toxigen`` and ``jigsaw`` harnesses on tiny files in the original layouts.

The fixture rows under ``fixtures/toxicity/`` were written by the chatmon authors (no row of any
data set). Metric arithmetic is checked exactly with scores we set per text; one run goes
through the real offline detector end to end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import BENCHES, run_benchmark
from pipeline.eval import toxicity_sets as ts
from pipeline.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "toxicity"

# text -> (toxicity, identity_attack); everything else scores 0.
SCORES = {
    "RT @shop: our new store opens at 9 tomorrow & coffee is free": (0.1, 0.0),
    "this fucking bus is late again": (0.9, 0.1),
    "those people are vermin and should be driven out of town": (0.8, 0.7),
    "lovely weather for a walk in the park today": (0.05, 0.0),
    "shut up you stupid idiot": (0.95, 0.8),  # ranks above one hate tweet: AUPRC < 1
    "send them all back where they came from": (0.3, 0.9),
    "they should all go back to their own countries": (0.9, 0.0),
    "immigrants are ruining this country": (0.2, 0.0),  # a missed hate statement
    "many immigrants start small businesses": (0.1, 0.0),
    "my grandparents came here as immigrants in 1952": (0.7, 0.0),  # a false positive
    "women are too emotional to lead": (0.8, 0.0),
    "women should stay in the kitchen": (0.9, 0.0),
    "the first woman to win a nobel prize was marie curie": (0.1, 0.0),
    "women make up about half of the workforce": (0.2, 0.0),
}


@pytest.fixture
def fixed_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(rows: list[ts.Row], settings: Settings) -> dict[str, np.ndarray]:
        out = {lab: np.zeros(len(rows)) for lab in ts.LABELS}
        for i, r in enumerate(rows):
            out["toxicity"][i], out["identity_attack"][i] = SCORES.get(r.text, (0.0, 0.0))
        return out

    monkeypatch.setattr(ts, "score_rows", fake)


SETTINGS = Settings(thresholds={"toxicity.toxicity": 0.5})


def test_benches_are_registered() -> None:
    for name in ("davidson", "toxigen", "jigsaw"):
        assert BENCHES[name].startswith("pipeline.eval.toxicity_sets:evaluate_")


def test_davidson_metrics(fixed_scores: None) -> None:
    res = run_benchmark("davidson", FIXTURES / "davidson", SETTINGS).as_dict()
    assert res["n"] == 6 and res["detector"] == "toxicity"
    # toxic (classes 0, 1) vs neither: the two neither tweets score 0.1 and 0.05, all four toxic
    # ones (0.3 to 0.95) score higher: AUROC 1.
    assert res["metrics"]["auroc_toxic"] == pytest.approx(1.0)
    # hate by identity_attack: 0.9 (hate), 0.8 (offensive), 0.7 (hate): AP = (1 + 2/3) / 2
    assert res["metrics"]["auprc_hate"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-4)
    # At the toxicity cut (0.5 here): toxic 0.9, 0.8, 0.95 flagged, 0.3 not; neither 0.1, 0.05.
    m = res["metrics"]
    assert (m["recall_at_cut"], m["fpr_at_cut"], m["precision_at_cut"]) == (0.75, 0.0, 1.0)
    # Hate by identity_attack at its policy cut (0.5): both hate tweets (0.7, 0.9) flagged, and
    # one of the four others (0.8): recall 1, FPR 1/4, precision 2/3.
    hate = res["detail"]["hate_at_cut"]
    assert res["detail"]["hate_threshold"] == 0.5
    assert hate["recall_at_cut"] == 1.0 and hate["fpr_at_cut"] == 0.25
    assert hate["precision_at_cut"] == pytest.approx(2 / 3)


def test_toxigen_metrics_use_the_policy_threshold(fixed_scores: None) -> None:
    res = run_benchmark("toxigen", FIXTURES / "toxigen", SETTINGS).as_dict()
    assert res["n"] == 8
    groups = res["detail"]["groups"]
    # immigrant: 1 of 2 hate caught, 1 of 2 neutral flagged -> bal acc 0.5, FPR 0.5
    assert groups["immigrant"]["tpr"] == 0.5 and groups["immigrant"]["fpr"] == 0.5
    # women: both caught, none flagged -> bal acc 1
    assert groups["women"]["bal_acc"] == 1.0
    assert res["metrics"]["worst_group_bal_acc"] == pytest.approx(0.5)
    assert res["metrics"]["max_group_fpr"] == pytest.approx(0.5)
    # (hate, neutral) pairs ranked right: 14.5 of 16 (0.2 loses to 0.7 and ties with 0.2)
    assert res["metrics"]["auroc"] == pytest.approx(14.5 / 16, abs=1e-4)
    # hate 0.9, 0.2, 0.8, 0.9 (3 of 4 at 0.5); neutral 0.1, 0.7, 0.1, 0.2 (1 of 4 flagged)
    m = res["metrics"]
    assert (m["recall_at_cut"], m["fpr_at_cut"], m["precision_at_cut"]) == (0.75, 0.25, 0.75)
    # A stricter threshold from settings changes the flag-based metrics, not the AUROC.
    strict = run_benchmark("toxigen", FIXTURES / "toxigen",
                           Settings(thresholds={"toxicity.toxicity": 0.85})).as_dict()
    assert strict["metrics"]["max_group_fpr"] == 0.0
    assert strict["metrics"]["auroc"] == res["metrics"]["auroc"]
    assert strict["metrics"]["recall_at_cut"] == 0.5 and strict["metrics"]["fpr_at_cut"] == 0.0


def test_jigsaw_metrics(fixed_scores: None) -> None:
    res = run_benchmark("jigsaw", FIXTURES / "jigsaw", SETTINGS).as_dict()
    assert res["n"] == 5 and res["detail"]["n_toxic"] == 2
    assert res["metrics"]["auroc_toxic"] == pytest.approx(0.5)  # unknown texts all score 0
    # nothing reaches the cut: recall and FPR 0, precision undefined (None, never 0)
    m = res["metrics"]
    assert (m["recall_at_cut"], m["fpr_at_cut"], m["precision_at_cut"]) == (0.0, 0.0, None)


def test_missing_file_and_column_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match="labeled_data.csv"):
        ts.load_davidson(tmp_path)
    (tmp_path / "test_examples.csv").write_text("comment_text,toxic\nhello,0\n")
    with pytest.raises(EvalDataError, match="missing columns"):
        ts.load_jigsaw(tmp_path)


def test_davidson_html_entities_are_unescaped() -> None:
    rows = ts.load_davidson(FIXTURES / "davidson")
    assert rows[0].text.endswith("& coffee is free")
    assert [r.labels["hate"] for r in rows] == [0, 0, 1, 0, 0, 1]


def test_real_detector_end_to_end_on_jigsaw_fixture() -> None:
    res = run_benchmark("jigsaw", FIXTURES / "jigsaw", Settings()).as_dict()
    assert res["metrics"]["auroc_toxic"] == pytest.approx(1.0)
    assert res["detail"]["backend"] == "offline"
