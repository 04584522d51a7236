"""presidio-synth eval: overlap matching and micro metrics by hand, then the harness on a tiny
fixture written for this test in the set's original layout (``synth_dataset_v2.json``)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from pipeline.errors import EvalDataError
from pipeline.eval import run_benchmark
from pipeline.eval.presidio_synth import SCORED, count, load_records, prf
from pipeline.settings import Settings

FIXTURE = Path(__file__).parent / "fixtures" / "presidio-synth"


def test_overlap_matching_and_micro_metrics() -> None:
    gold = [(0, 10, "PERSON"), (20, 30, "STREET_ADDRESS"), (31, 36, "STREET_ADDRESS"),
            (40, 45, "LOCATION")]
    pred = [(2, 8, "PERSON"),            # overlaps its gold: a hit
            (18, 37, "STREET_ADDRESS"),  # one block covering two address pieces
            (38, 46, "STREET_ADDRESS"),  # covers the LOCATION: found leniently, wrong type strictly
            (50, 55, "PHONE_NUMBER")]    # no gold: a false positive
    lenient, strict = count(gold, pred), count(gold, pred, lenient=False)
    assert prf(lenient, SCORED)["recall"] == 1.0
    assert prf(strict, SCORED)["recall"] == 0.75
    assert prf(lenient, SCORED)["precision"] == 0.5  # 2 of 4 predictions overlap a same-type gold
    assert math.isnan(prf(Counter(), ["PERSON"])["f1"])  # no gold, no prediction
    assert prf(Counter({"gold|PERSON": 2}), ["PERSON"])["f1"] == 0.0  # all missed


def test_mapping_keeps_scored_types_only() -> None:
    records = load_records(FIXTURE)
    assert len(records) == 7
    types = {e for _, gold in records for _, _, e in gold}
    assert types == {"EMAIL_ADDRESS", "US_SSN", "CREDIT_CARD", "STREET_ADDRESS", "LOCATION"}
    text, gold = records[4]
    assert text[gold[0][0]:gold[0][1]] == "Portugal" and gold[0][2] == "LOCATION"


def test_missing_or_bad_folder(tmp_path: Path) -> None:
    with pytest.raises(EvalDataError, match="missing"):
        load_records(tmp_path)
    (tmp_path / "synth_dataset_v2.json").write_text(json.dumps([{"spans": []}]))
    with pytest.raises(EvalDataError, match="layout"):
        load_records(tmp_path)


def test_eval_on_fixture() -> None:
    result = run_benchmark("presidio-synth", FIXTURE, Settings()).as_dict()
    assert result["benchmark"] == "presidio-synth" and result["detector"] == "pii"
    assert result["n"] == 7
    assert set(result["metrics"]) == {"recall", "precision", "f1"}
    per = result["detail"]["per_entity"]
    for entity in ("EMAIL_ADDRESS", "US_SSN", "CREDIT_CARD", "STREET_ADDRESS", "LOCATION"):
        assert per[entity]["n_gold"] == 1 and per[entity]["recall"] == 1.0, entity
    assert result["metrics"]["recall"] == 1.0
    assert result["metrics"]["precision"] >= 0.8
