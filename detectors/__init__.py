"""Pure detectors: turns and context in, findings out.

Nothing in this package touches Kafka, a database, metrics, settings or the environment;
``tests/test_architecture.py`` enforces it.
"""

from detectors.base import (
    Context,
    Detector,
    DetectorError,
    Finding,
    ScoringInput,
    StateStore,
    Turn,
)

__all__ = [
    "Context",
    "Detector",
    "DetectorError",
    "Finding",
    "ScoringInput",
    "StateStore",
    "Turn",
]
