"""``pipeline.training.empathy.train_empathy``: fits level heads on EPITOME-format data (here the
tests' own hand-written fixture), writes weights with a licence note, and the detector loads them
through its ``weights`` option and reports the heads' levels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from detectors.empathy import EmpathyDetector
from pipeline.eval.empathy_sets import load_epitome
from pipeline.scoring.suite import score_texts, simple_input
from pipeline.training.empathy import train_empathy

FIXTURE = Path(__file__).resolve().parent.parent / "eval" / "fixtures" / "epitome"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    return train_empathy(FIXTURE, tmp_path_factory.mktemp("empathy_trained"), c=10.0)


def test_writes_weights_and_licence_note(trained) -> None:
    assert trained.name == "model.npz"
    assert "non-commercial" in (trained.parent / "LICENSE-NOTE.txt").read_text()
    with np.load(trained) as npz:
        assert npz["head_w"].shape[:2] == (3, 3) and "tactic_w" in npz.files


def test_detector_uses_trained_heads(trained) -> None:
    rows = load_epitome(FIXTURE)
    det = EmpathyDetector(weights=str(trained))
    det.load()
    found = score_texts(det, [simple_input(r["text"], prompt=r["prompt"]) for r in rows])
    by = [{f.label: f for f in fs} for fs in found]
    for mech in ("er", "ip", "ex"):
        levels = [b[f"empathy.{mech}"].evidence["level"] for b in by]
        gold = [r[mech] for r in rows]
        # fitted on these 8 rows: the heads reproduce most of their levels
        assert sum(int(a == b) for a, b in zip(levels, gold, strict=True)) >= 6, (
            mech,
            levels,
            gold,
        )
