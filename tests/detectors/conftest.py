"""Fixtures shared by the detector tests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from detectors.base import Context, Finding, ScoringInput, Turn
from detectors.empathy import EmpathyDetector
from detectors.manipulation.detector import ManipulationDetector
from detectors.pii.detector import PiiDetector
from pipeline.policy import is_flagged
from pipeline.scoring.suite import DetectorSuite, score_texts, simple_input

TS = datetime(2026, 1, 1, tzinfo=UTC)


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


def pii_after(det: PiiDetector, text: str, user: str, role: str = "assistant") -> list[Finding]:
    """The PII findings of ``text`` said by ``role`` after the user turn ``user``."""
    hist = (Turn("c", 0, "user", user, TS),)
    return det.score([ScoringInput(Turn("c", 1, role, text, TS), Context(history=hist))])[0]


def assert_names_kept(det: PiiDetector, domain: str, user: str, reply: str,
                      names: list[str]) -> None:
    """Each of ``names`` survives redaction of the bot's ``reply`` to ``user``, which raises no
    flagged pii.person or pii.leak."""
    found = pii_after(det, reply, user)
    redacted = det.redact_with(reply, found)
    for name in names:
        assert name in redacted, (domain, name, redacted)
    flagged = {f.label for f in found if is_flagged(f.label, f.score)}
    assert not flagged & {"pii.person", "pii.leak"}, (domain, found)


@pytest.fixture(scope="session")
def manipulation() -> DetectorSuite:
    """One loaded manipulation detector (in a suite) for the face-validity modules."""
    suite = DetectorSuite([ManipulationDetector()])
    suite.load()
    return suite


def manipulation_score(suite: DetectorSuite, text: str, prompt: str) -> float:
    """The reply's ``manipulation.score`` (0 when it has none)."""
    res = suite.score([simple_input(text, prompt=prompt)])
    return max((f.score for f in res.findings[0] if f.label == "manipulation.score"),
               default=0.0)
