"""Shared pieces of the evaluation harness: the result type, metrics, and scoring texts through
a registered detector exactly as the pipeline does (shared features, batches)."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import EvalDataError


@dataclass(frozen=True)
class EvalResult:
    benchmark: str
    detector: str
    n: int
    metrics: dict[str, float]
    detail: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "benchmark": self.benchmark,
            "detector": self.detector,
            "n": self.n,
            "metrics": {k: _round(v) for k, v in self.metrics.items()},
        }
        if self.detail:
            out["detail"] = self.detail
        return out


def _round(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 4)


def require(path: Path, *names: str) -> list[Path]:
    """The named files inside ``path``, or an EvalDataError naming what is missing."""
    files = [path / n for n in names]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise EvalDataError(f"{path}: missing {', '.join(missing)}")
    return files


def read_csv(file: Path, columns: Sequence[str]) -> list[dict[str, str]]:
    """Rows of a CSV file as dicts, or an EvalDataError naming the columns it lacks."""
    with file.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise EvalDataError(f"{file}: missing columns {', '.join(missing)}")
        return list(reader)


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    from sklearn.metrics import roc_auc_score

    y = np.asarray(labels)
    if y.min() == y.max():
        return float("nan")
    return float(roc_auc_score(y, np.asarray(scores, dtype=float)))


def auprc(labels: Sequence[int], scores: Sequence[float]) -> float:
    from sklearn.metrics import average_precision_score

    return float(average_precision_score(np.asarray(labels), np.asarray(scores, dtype=float)))


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def macro_f1(y_true: Sequence[int], y_pred: Sequence[int]) -> float:
    from sklearn.metrics import f1_score

    return float(f1_score(y_true, y_pred, average="macro"))


def weighted_kappa(a: Sequence[int], b: Sequence[int], levels: Sequence[int] = (0, 1, 2)) -> float:
    """Quadratic-weighted Cohen's kappa between two raters on the ordinal ``levels`` (NaN when
    there is nothing to compare or neither rater varies)."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) == 0 or len(a) != len(b) or (len(set(a)) == 1 and len(set(b)) == 1):
        return float("nan")
    return float(cohen_kappa_score(list(a), list(b), labels=list(levels), weights="quadratic"))


def at_cut(labels: Sequence[int], scores: Sequence[float], threshold: float) -> dict[str, float]:
    """What a team sees at the shipped flag threshold: ``recall_at_cut`` (positives flagged),
    ``fpr_at_cut`` (negatives flagged) and ``precision_at_cut`` (flags that are positives) for
    ``score >= threshold``. A rate with nothing to count over is NaN, never 0."""
    y = np.asarray(labels, dtype=int)
    flagged = np.asarray(scores, dtype=float) >= threshold
    pos, neg = y == 1, y == 0

    def share(num: int, den: int) -> float:
        return num / den if den else float("nan")

    return {
        "recall_at_cut": share(int((flagged & pos).sum()), int(pos.sum())),
        "fpr_at_cut": share(int((flagged & neg).sum()), int(neg.sum())),
        "precision_at_cut": share(int((flagged & pos).sum()), int(flagged.sum())),
    }
