"""Empathy detector package: see ``detectors.empathy.detector`` for the findings it returns."""

from detectors.empathy.detector import EmpathyDetector
from detectors.empathy.examples import EXAMPLES

__all__ = ["EXAMPLES", "EmpathyDetector"]
