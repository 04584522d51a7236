"""Fixtures shared by the detector tests."""

from __future__ import annotations

import pytest

from detectors.base import Finding
from detectors.empathy import EmpathyDetector
from detectors.pii.detector import PiiDetector
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


@pytest.fixture(scope="session")
def pii() -> PiiDetector:
    """A loaded PII detector with no result cache, so each text is analysed afresh (modules that
    need another set-up define their own ``pii``)."""
    det = PiiDetector(cache_size=0)
    det.load()
    return det
