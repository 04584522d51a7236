"""Shipped policy: thresholds that turn detector scores into flagged findings.

Scores are not policy. Each detector's thresholds ship in ``pipeline/policy/<detector>.json``
(chosen on dev data; the file says on which) as ``{"thresholds": {label: min_score}}``.
A label without its own entry falls back to ``<detector>.*``, then to ``default``.
``Settings.thresholds`` overrides any entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path

_DIR = Path(__file__).parent
DEFAULT_THRESHOLD = 0.5


@cache
def shipped_thresholds() -> dict[str, float]:
    out: dict[str, float] = {}
    for f in sorted(_DIR.glob("*.json")):
        out.update(json.loads(f.read_text()).get("thresholds", {}))
    return out


def threshold(label: str, overrides: Mapping[str, float] | None = None) -> float:
    """The flagging threshold for ``label`` (overrides first, then shipped, then default)."""
    detector = label.split(".", 1)[0]
    for table in (overrides or {}, shipped_thresholds()):
        for key in (label, f"{detector}.*", "default"):
            if key in table:
                return float(table[key])
    return DEFAULT_THRESHOLD


def is_flagged(label: str, score: float, overrides: Mapping[str, float] | None = None) -> bool:
    return score >= threshold(label, overrides)
