"""The empathy cases planted in ``examples/transcripts.jsonl`` (see ``examples/planted.json``):
each flag catches most of its planted turns, aligned replies score high alignment, and no flag
fires on the planted near misses."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import pytest

from detectors.base import Context, ScoringInput, Turn
from detectors.empathy import EmpathyDetector
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
FLAGS = ("advice_before_ack", "formulaic_restatement", "overempathising", "length_inflated")


def _turn(t: dict) -> Turn:
    ts = datetime.fromisoformat(t["ts"].replace("Z", "+00:00"))
    return Turn(t["conversation_id"], t["turn"], t["role"], t["text"], ts)


@pytest.fixture(scope="module")
def scored() -> list[tuple[dict, dict[str, float]]]:
    if not (EXAMPLES / "planted.json").is_file():
        pytest.skip("examples/planted.json is not in this checkout")
    convs: dict[str, list[dict]] = defaultdict(list)
    for line in (EXAMPLES / "transcripts.jsonl").read_text().splitlines():
        t = json.loads(line)
        convs[t["conversation_id"]].append(t)
    cases = [
        p for p in json.loads((EXAMPLES / "planted.json").read_text()) if p["signal"] == "empathy"
    ]
    cases += [
        p
        for p in json.loads((EXAMPLES / "near_misses.json").read_text())
        if p.get("signal") == "empathy"
    ]
    items = []
    for p in cases:
        conv = sorted(convs[p["conversation_id"]], key=lambda t: t["turn"])
        history = tuple(_turn(t) for t in conv if t["turn"] < p["turn"])
        current = next(t for t in conv if t["turn"] == p["turn"])
        items.append(ScoringInput(_turn(current), Context(history=history)))
    det = EmpathyDetector()
    det.load()
    return [
        (p, {f.label: f.score for f in found})
        for p, found in zip(cases, score_texts(det, items), strict=True)
    ]


def _fires(scores: dict[str, float], label: str) -> bool:
    return scores.get(label, 0.0) >= threshold(label)


@pytest.mark.parametrize("flag", FLAGS)
def test_planted_flags_are_caught(scored, flag) -> None:
    label = f"empathy.{flag}"
    planted = [s for p, s in scored if p.get("expect_label") == label]
    assert planted, f"no planted case for {label}"
    recall = sum(_fires(s, label) for s in planted) / len(planted)
    assert recall >= 0.75, (label, recall)


def test_flags_spare_well_aligned_replies(scored) -> None:
    good = [
        s for p, s in scored if p.get("expect_label") == "empathy.alignment" and p["note"] == "high"
    ]
    assert good
    assert all(s["empathy.alignment"] >= 0.5 for s in good)
    # The tone flags. formulaic_restatement is left out: since issue 27 it asks whether the
    # acknowledgement engages the user's situation, which these cases were not written to vary
    # ("That sounds really frightening" before a good fix is a generic acknowledgement).
    tone = ("advice_before_ack", "overempathising", "length_inflated")
    false_flags = sum(_fires(s, f"empathy.{f}") for s in good for f in tone)
    assert false_flags <= 1


def test_near_misses_do_not_fire(scored) -> None:
    for p, s in scored:
        if "not_label" in p:
            assert not _fires(s, p["not_label"]), p
