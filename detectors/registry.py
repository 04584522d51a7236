"""The one registry of detectors: name -> factory.

Adding a detector is one module plus one entry here. Factories import their module lazily so
that importing the registry stays cheap and never loads a model. Each factory takes the
detector's options (a plain mapping from pipeline config) and returns an unloaded detector.
Every registered module must define ``EXAMPLES`` (see ``detectors.base.Example``);
``tests/test_registry.py`` fails otherwise.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from detectors.base import Detector, DetectorError

Factory = Callable[[Mapping[str, Any]], Detector]

# name -> "module:Class". The class is constructed with the options as keyword arguments.
_ENTRIES: dict[str, str] = {
    "pii": "detectors.pii.detector:PiiDetector",
    "repetition": "detectors.repetition.detector:RepetitionDetector",
    "empathy": "detectors.empathy:EmpathyDetector",
    "manipulation": "detectors.manipulation.detector:ManipulationDetector",
    "bias": "detectors.bias.detector:BiasDetector",
    "toxicity": "detectors.toxicity.detector:ToxicityDetector",
    "style": "detectors.style.detector:StyleDetector",
}


def _factory(target: str) -> Factory:
    module_name, _, class_name = target.partition(":")

    def build(options: Mapping[str, Any]) -> Detector:
        cls = getattr(importlib.import_module(module_name), class_name)
        try:
            return cls(**dict(options))
        except TypeError as exc:  # an unknown or missing option: say which, no traceback
            raise DetectorError(f"bad detector options {sorted(options)}: {exc}") from exc

    build.__qualname__ = f"build_{class_name}"
    build.module = module_name  # type: ignore[attr-defined]
    return build


REGISTRY: dict[str, Factory] = {name: _factory(target) for name, target in _ENTRIES.items()}


def module_of(name: str) -> str:
    return _ENTRIES[name].partition(":")[0]


def create(name: str, options: Mapping[str, Any] | None = None) -> Detector:
    try:
        factory = REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise KeyError(f"unknown detector {name!r}; registered: {known}") from None
    return factory(options or {})
