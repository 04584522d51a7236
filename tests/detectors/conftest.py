"""Fixtures shared by the detector tests."""

from __future__ import annotations

import pytest

from detectors.base import Finding
from detectors.empathy import EmpathyDetector
from pipeline.scoring.suite import score_texts, simple_input


@pytest.fixture(scope="session")
def empathy() -> EmpathyDetector:
    """One loaded empathy detector for every empathy test module (loading reads its models)."""
    det = EmpathyDetector()
    det.load()
    return det


def empathy_findings(det: EmpathyDetector, text: str, prompt: str = "") -> dict[str, Finding]:
    """The reply's empathy findings by sub-label ("score", "er", "missed", ...)."""
    (found,) = score_texts(det, [simple_input(text, prompt=prompt)])
    return {f.label.split(".", 1)[1]: f for f in found}
