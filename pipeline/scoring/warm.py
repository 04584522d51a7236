"""``chatmon models warm``: everything the enabled detectors build on first use, built now.

It loads the detectors exactly as ``run``, ``serve`` and ``worker`` do (the same settings, detector
options and encoder backend) and scores each detector's shipped examples once, so whatever a
detector makes lazily is made: the int8 ONNX exports written to the export cache
(``detectors.onnx_backend.default_cache_dir``), the PII analyser's spaCy pipeline in its child
process. An image build runs it, so a container's first turn is never an export, and the image
can then run with a read-only file system and without torch. It names no model itself: whatever
the detectors load is what gets warmed.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from detectors.base import ScoringInput
from detectors.onnx_backend import default_cache_dir
from detectors.registry import module_of
from pipeline.errors import ChatmonError
from pipeline.settings import Settings


def example_inputs(names: tuple[str, ...]) -> list[ScoringInput]:
    """Each named detector's shipped examples (and the replies they follow) as scoring inputs."""
    from pipeline.scoring.suite import simple_input

    out = []
    for name in names:
        for ex in getattr(importlib.import_module(module_of(name)), "EXAMPLES", ()):
            out += [simple_input(text, "assistant") for text in ex.preceded_by]
            out.append(simple_input(ex.text, ex.role, ex.prompt))
    return out


def warm(settings: Settings) -> dict[str, Any]:
    """Load and exercise the enabled detectors; returns what was loaded and the cache's files."""
    from pipeline.scoring.redaction import redaction_stage
    from pipeline.scoring.suite import DetectorSuite

    t0 = time.perf_counter()
    names = settings.enabled_detectors()
    options = settings.scoring_options()
    suite = DetectorSuite.from_names(names, options, encoder_backend=settings.encoder_backend)
    redactor = redaction_stage(suite.detectors, options["pii"])
    try:
        suite.load()
        redactor.load()
        items = example_inputs(names)
        result = suite.score(items)
        if result.failures:
            f = result.failures[0]
            raise ChatmonError(f"models warm: detector {f.detector} failed: {f.error}")
    finally:
        for d in {id(d): d for d in [*suite.detectors, redactor.pii]}.values():
            close = getattr(d, "close", None)
            if close is not None:
                close()
    cache = default_cache_dir()
    files = sorted(p.name for p in cache.glob("*")) if cache.is_dir() else []
    return {"detectors": suite.versions, "examples_scored": len(items),
            "onnx_cache_dir": str(cache), "onnx_cache_files": files,
            "seconds": round(time.perf_counter() - t0, 1)}

