"""``chatmon eval contrast PATH``: does the empathy score tell engagement from a script?

``PATH/scenarios.jsonl`` holds one upset user message per line (``id``, ``user``, optional
``domain`` and ``split``) with three replies to it under ``replies``: ``tailored`` (names the
feeling and what caused it, acts on it), ``stock`` (a generic acknowledgement or apology, then
procedure) and ``cold`` (procedure only). Our own set is ``tests/eval/contrast``.

Metrics, over all scenarios (thresholds from the shipped policy):
- ``pairwise_tailored_stock`` / ``pairwise_tailored_cold``: share of scenarios whose tailored
  reply has the higher ``empathy.score`` (a tie counts one half);
- ``stock_level_le1``: share of stock replies whose emotional-reaction and interpretation
  levels are both at most 1 (a generic acknowledgement is at most a weak one);
- ``formulaic_stock`` / ``formulaic_tailored``: share flagged ``empathy.formulaic_restatement``;
- ``missed_stock`` / ``missed_tailored`` / ``missed_cold``: share flagged ``empathy.missed``.
With a ``split`` column, each metric is repeated per split under ``detail`` and as
``heldout_<metric>`` for the held-out half (the numbers to trust for a set that was tuned on).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import Finding
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, require
from pipeline.eval.empathy_sets import DETECTOR, score_items
from pipeline.policy import threshold
from pipeline.scoring.suite import simple_input
from pipeline.settings import Settings

FILE = "scenarios.jsonl"
KINDS = ("tailored", "stock", "cold")
Scored = dict[str, dict[str, Finding]]  # reply kind -> label -> finding


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    (file,) = require(path, FILE)
    rows = []
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row["user"], str) or any(
                not isinstance(row["replies"][k], str) for k in KINDS
            ):
                raise TypeError("user and replies must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            raise EvalDataError(
                f"{file}:{n}: needs user and replies.{'/'.join(KINDS)}: {exc}") from exc
        rows.append(row)
    if not rows:
        raise EvalDataError(f"{file}: no scenarios")
    return rows


def _flagged(found: dict[str, Finding], sub: str) -> bool:
    f = found.get(f"{DETECTOR}.{sub}")
    return f is not None and f.score >= threshold(f.label)


def _level(found: dict[str, Finding], mech: str) -> int:
    return int(found[f"{DETECTOR}.{mech}"].evidence["level"])


def _win(a: float, b: float) -> float:
    return 0.5 if a == b else float(a > b)


def contrast_metrics(scored: Sequence[Scored]) -> dict[str, float]:
    """The bench's metrics over a list of scored scenarios."""
    score = {k: [s[k][f"{DETECTOR}.score"].score for s in scored] for k in KINDS}
    out = {
        "pairwise_tailored_stock": float(np.mean(
            [_win(t, s) for t, s in zip(score["tailored"], score["stock"], strict=True)])),
        "pairwise_tailored_cold": float(np.mean(
            [_win(t, c) for t, c in zip(score["tailored"], score["cold"], strict=True)])),
        "stock_level_le1": float(np.mean(
            [max(_level(s["stock"], "er"), _level(s["stock"], "ip")) <= 1 for s in scored])),
        "formulaic_stock": float(np.mean(
            [_flagged(s["stock"], "formulaic_restatement") for s in scored])),
        "formulaic_tailored": float(np.mean(
            [_flagged(s["tailored"], "formulaic_restatement") for s in scored])),
    }
    for kind in KINDS:
        out[f"missed_{kind}"] = float(np.mean([_flagged(s[kind], "missed") for s in scored]))
    return out


def describe(scored: Sequence[Scored]) -> dict[str, Any]:
    """Per reply kind: mean score, level counts per mechanism, and how often the cause was
    addressed."""
    out: dict[str, Any] = {}
    for kind in KINDS:
        found = [s[kind] for s in scored]
        cause = [f.get(f"{DETECTOR}.cause_addressed") for f in found]
        out[kind] = {
            "mean_score": round(float(np.mean([f[f"{DETECTOR}.score"].score for f in found])), 4),
            "levels": {m: np.bincount([_level(f, m) for f in found], minlength=3).tolist()
                       for m in ("er", "ip", "ex")},
            "cause_addressed": round(float(np.mean(
                [c is not None and c.score >= 0.5 for c in cause])), 4),
        }
    return out


def evaluate_contrast(path: Path, settings: Settings) -> EvalResult:
    rows = load_scenarios(path)
    items = [simple_input(r["replies"][k], prompt=r["user"], conversation_id=f"{r['id']}:{k}")
             for r in rows for k in KINDS]
    found = score_items(items, settings)
    scored = [dict(zip(KINDS, found[i * len(KINDS):(i + 1) * len(KINDS)], strict=True))
              for i in range(len(rows))]
    metrics = contrast_metrics(scored)
    detail: dict[str, Any] = {"by_kind": describe(scored)}
    splits = sorted({str(r["split"]) for r in rows if r.get("split")})
    if splits:
        detail["by_split"] = {}
        for split in splits:
            part = [s for s, r in zip(scored, rows, strict=True) if r.get("split") == split]
            detail["by_split"][split] = {"n": len(part), **{
                k: round(v, 4) for k, v in contrast_metrics(part).items()}}
        if "heldout" in detail["by_split"]:
            held = detail["by_split"]["heldout"]
            metrics.update({f"heldout_{k}": held[k] for k in (
                "pairwise_tailored_stock", "pairwise_tailored_cold", "stock_level_le1",
                "formulaic_stock", "formulaic_tailored")})
    domains = {str(r.get("domain", "")) for r in rows} - {""}
    detail["domains"] = len(domains)
    return EvalResult("contrast", DETECTOR, len(rows), metrics, detail)
