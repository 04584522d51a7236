"""``chatmon eval BENCH PATH``: a detector's quality on a public labelled set.

One entry per benchmark: name -> "module:function". The function takes the set's folder and the
settings and returns an ``EvalResult``. Thresholds come from the shipped configuration, never from
the data being evaluated.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from pipeline.eval.core import EvalResult
from pipeline.settings import Settings

BENCHES: dict[str, str] = {
    "presidio-synth": "pipeline.eval.presidio_synth:evaluate",
    "epitome": "pipeline.eval.empathy_sets:evaluate_epitome",
    "welivita-pu": "pipeline.eval.empathy_sets:evaluate_welivita",
    "kumar": "pipeline.eval.empathy_kumar:evaluate_kumar",
    "contrast": "pipeline.eval.empathy_contrast:evaluate_contrast",
    "goemotions": "pipeline.eval.empathy_emotions:evaluate_goemotions",
    "mentalmanip": "pipeline.eval.manipulation_sets:evaluate_mentalmanip",
    "persuasionforgood": "pipeline.eval.manipulation_sets:evaluate_persuasionforgood",
    "crows-pairs": "pipeline.eval.bias_sets:evaluate_crows",
    "bbq": "pipeline.eval.bias_sets:evaluate_bbq",
    "davidson": "pipeline.eval.toxicity_sets:evaluate_davidson",
    "toxigen": "pipeline.eval.toxicity_sets:evaluate_toxigen",
    "jigsaw": "pipeline.eval.toxicity_sets:evaluate_jigsaw",
    "benign": "pipeline.eval.benign:evaluate",
}


def run_benchmark(name: str, path: Path, settings: Settings) -> EvalResult:
    try:
        target = BENCHES[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHES))}") from None
    module_name, _, func = target.partition(":")
    return getattr(importlib.import_module(module_name), func)(path, settings)
