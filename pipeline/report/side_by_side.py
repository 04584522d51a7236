"""The report's "models side by side": ``chatmon compare``'s signals that the rollups hold, for
the window's busiest models, from the rollups alone (issue 41).

Per model (all bots and tenants): mean empathy with Student's t interval and Welch's for the
difference to the reference model (the busiest one); the flagged rates with Wilson's interval
and Newcombe's for the difference, as ``chatmon compare`` computes them. ``chatmon compare``
itself reads the replies (its style profile and the paired-probe empathy gap need each reply);
the report leaves those to it.
"""

from __future__ import annotations

from typing import Any

from pipeline.compare.signals import SIGNALS
from pipeline.compare.stats import Moments, excludes_zero, newcombe, t_mean, welch_diff, wilson
from pipeline.report.rollups import (
    EMPTY,
    NOW,
    TURNS,
    Cells,
    Key,
    Sums,
    detector_turns,
    empathy,
    label_turns,
)

COMPARED_MODELS = 4
# compare's rate signals as rollup rows: a signal of a label prefix is the detector's row (labels
# are <detector>.<subtype>). empathy_failures is "replies with a flagged empathy finding": the
# policy never flags empathy's measurements (score, er, ip, ex, alignment, cause_addressed:
# threshold 2.0, pipeline/policy/empathy.json), so only the failures are ever flagged.
RATES: dict[str, Key] = {
    "repetition": detector_turns("repetition"),
    "manipulation": detector_turns("manipulation"),
    "toxicity": detector_turns("toxicity"),
    "bias": label_turns("bias.stereotype"),
    "pii": detector_turns("pii"),
    "empathy_missed": label_turns("empathy.missed"),
    "empathy_failures": detector_turns("empathy"),
}
MEANS: dict[str, Key] = {"empathy": empathy()}
LABELS = tuple(label for _, label, _ in RATES.values() if label)  # the label rates' rows


def _model(bot_id: str, model: str) -> str:
    return model


def models(sums: Sums, limit: int = COMPARED_MODELS) -> list[str]:
    """The window's models with the most replies, most first (ties by name; no unnamed
    model)."""
    groups = sums.groups(NOW, _model)
    ranked = sorted(((cells[TURNS].n, m) for m, cells in groups.items() if m),
                    key=lambda nm: (-nm[0], nm[1]))
    return [m for _, m in ranked[:limit]]


def _row(name: str, kind: str, about: str, cells: dict[str, Cells], key: Key,
         confidence: float) -> dict[str, Any]:
    names = list(cells)
    row: dict[str, Any] = {"signal": name, "kind": kind, "about": about, "models": {},
                           "differences": {}}
    if kind == "rate":
        counts = {m: (c.get(key, EMPTY).flagged, c[TURNS].n) for m, c in cells.items()}
        row["models"] = {m: wilson(k, n, confidence).as_dict() for m, (k, n) in counts.items()}
        diffs = {m: newcombe(*counts[names[0]], *counts[m], confidence) for m in names[1:]}
    else:
        moments = {m: c.get(key, EMPTY).moments for m, c in cells.items()}
        row["models"] = {m: t_mean(v, confidence, (0.0, 1.0)).as_dict()
                         for m, v in moments.items()}
        diffs = {m: welch_diff(moments[names[0]], moments.get(m, Moments()), confidence)
                 for m in names[1:]}
    row["differences"] = {m: {**d.as_dict(), "significant": excludes_zero(d)}
                          for m, d in diffs.items()}
    return row


def build(sums: Sums, confidence: float = 0.95) -> dict[str, Any] | None:
    """The comparison in ``chatmon compare --json``'s shape (signals the rollups hold), or None
    when the window holds fewer than two models."""
    chosen = models(sums)
    if len(chosen) < 2:
        return None
    groups = sums.groups(NOW, _model)
    cells = {m: groups[m] for m in chosen}
    rows = [_row(s.name, s.kind, s.about, cells, MEANS[s.name] if s.kind == "mean"
                 else RATES[s.name], confidence)
            for s in SIGNALS if s.name in MEANS or s.name in RATES]
    return {"models": chosen, "reference": chosen[0], "confidence": confidence,
            "replies": {m: c[TURNS].n for m, c in cells.items()}, "signals": rows}
