"""``chatmon review agreement``: how the stored flags agree with people, per label.

Per label, over the reviews of findings on turns since ``--since`` (of ``--tenant``):

- ``n`` reviews, ``agreement`` (share where ``present`` equals the finding's ``flagged``),
  ``precision`` (present among flagged), ``kappa`` (Cohen's, flags against people:
  scikit-learn), all over reviews, so two reviewers of one finding count twice;
- ``inter_rater``: with two or more reviewers on the same findings, Krippendorff's alpha
  (the ``krippendorff`` package) on ``present`` (nominal) and on ``rating`` (ordinal);
- ``rating``: for rated findings, the mean rating and its Spearman correlation with the score;
- ``suggestion``: the lowest threshold reaching the target precision on the reviewed findings,
  with a 95% Wilson interval, or why there is none (``stats.py``).

The sample is stratified, so precision and suggestions describe the reviewed findings; below the
current threshold flagged and unflagged strata were sampled at different rates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Engine, select

from pipeline.errors import MissingExtraError
from pipeline.policy.engine import Policy
from pipeline.review import stats
from pipeline.review.stats import MIN_REVIEWED, suggest_threshold
from pipeline.store.models import FindingRow, ReviewRow


@dataclass(frozen=True, slots=True)
class Reviewed:
    finding_id: str
    label: str
    score: float
    flagged: bool
    present: bool
    rating: int | None
    reviewer: str
    policy_version: str | None


def load(engine: Engine, since: datetime | None = None,
         tenant: str | None = None) -> list[Reviewed]:
    q = (select(ReviewRow.finding_id, FindingRow.label, FindingRow.score, FindingRow.flagged,
                ReviewRow.present, ReviewRow.rating, ReviewRow.reviewer, FindingRow.policy_version)
         .join(FindingRow, FindingRow.id == ReviewRow.finding_id)
         .order_by(FindingRow.label, ReviewRow.finding_id, ReviewRow.reviewer))
    if since is not None:
        q = q.where(FindingRow.ts >= since)
    if tenant is not None:
        q = q.where(FindingRow.tenant == tenant)
    with engine.connect() as conn:
        return [Reviewed(r[0], r[1], float(r[2]), bool(r[3]), bool(r[4]), r[5], r[6], r[7])
                for r in conn.execute(q)]


def _number(x: float) -> float | None:
    return None if x is None or math.isnan(x) else round(float(x), 4)


def kappa(flagged: Sequence[bool], present: Sequence[bool]) -> float | None:
    """Cohen's kappa; None where it is undefined (flags and people both never vary)."""
    return stats.kappa(flagged, present)


def alpha(rows: Sequence[Reviewed], field: str,
          level: Literal["nominal", "ordinal"]) -> float | None:
    """Krippendorff's alpha over findings with two or more values of ``field``; None where it is
    undefined (one value only)."""
    try:
        import krippendorff
        import numpy as np
    except ImportError as exc:
        raise MissingExtraError("krippendorff", "review") from exc
    values: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        v = getattr(r, field)
        if v is not None:
            values[r.finding_id][r.reviewer] = float(v)
    units = sorted(u for u, by in values.items() if len(by) >= 2)
    reviewers = sorted({rev for u in units for rev in values[u]})
    if not units or len({values[u][rev] for u in units for rev in values[u]}) < 2:
        return None
    data = np.full((len(reviewers), len(units)), np.nan)
    for j, u in enumerate(units):
        for rev, v in values[u].items():
            data[reviewers.index(rev), j] = v
    return _number(krippendorff.alpha(reliability_data=data, level_of_measurement=level))


def inter_rater(rows: Sequence[Reviewed]) -> dict[str, Any] | None:
    by_finding: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        by_finding[r.finding_id].add(r.reviewer)
    shared = {f for f, revs in by_finding.items() if len(revs) >= 2}
    if not shared:
        return None
    return {"findings": len(shared),
            "reviewers": len({rev for f in shared for rev in by_finding[f]}),
            "alpha_present": alpha(rows, "present", "nominal"),
            "alpha_rating": alpha(rows, "rating", "ordinal")}


def rating(rows: Sequence[Reviewed]) -> dict[str, Any] | None:
    rated = [r for r in rows if r.rating is not None]
    if not rated:
        return None
    out: dict[str, Any] = {"n": len(rated),
                           "mean": round(sum(r.rating or 0 for r in rated) / len(rated), 4),
                           "spearman_score": None}
    if len({r.rating for r in rated}) > 1 and len({r.score for r in rated}) > 1:
        from scipy.stats import spearmanr

        out["spearman_score"] = _number(spearmanr([r.score for r in rated],
                                                  [r.rating for r in rated]).statistic)
    return out


def label_stats(rows: Sequence[Reviewed], target: float, min_reviewed: int) -> dict[str, Any]:
    n = len(rows)
    flagged = [r.flagged for r in rows]
    present = [r.present for r in rows]
    on_flagged = [r.present for r in rows if r.flagged]
    shares: dict[str, list[float]] = defaultdict(list)
    scores: dict[str, float] = {}
    for r in rows:
        shares[r.finding_id].append(float(r.present))
        scores[r.finding_id] = r.score
    ids = sorted(shares)
    suggestion = suggest_threshold([scores[f] for f in ids],
                                   [sum(shares[f]) / len(shares[f]) for f in ids],
                                   target, min_reviewed)
    return {
        "n": n, "findings": len(ids), "reviewers": len({r.reviewer for r in rows}),
        "flagged": sum(flagged), "present": sum(present),
        "agreement": round(sum(f == p for f, p in zip(flagged, present, strict=True)) / n, 4),
        "precision": round(sum(on_flagged) / len(on_flagged), 4) if on_flagged else None,
        "kappa": kappa(flagged, present),
        "inter_rater": inter_rater(rows),
        "rating": rating(rows),
        "suggestion": suggestion.as_dict(),
        # The policies that decided the reviewed flags (None: stored before versioning).
        "policy_versions": sorted({r.policy_version or "none" for r in rows}),
    }


def agreement(engine: Engine, since: datetime | None = None, tenant: str | None = None,
              target: float = 0.9, min_reviewed: int = MIN_REVIEWED,
              policy: Policy | None = None) -> dict[str, Any]:
    rows = load(engine, since, tenant)
    by_label: dict[str, list[Reviewed]] = defaultdict(list)
    for r in rows:
        by_label[r.label].append(r)
    labels = {}
    for label, group in sorted(by_label.items()):
        labels[label] = label_stats(group, target, min_reviewed)
        if policy is not None:
            labels[label]["current_threshold"] = policy.threshold(label, tenant)
    from pipeline.judge.agreement import judge_agreement

    return {"reviews": len(rows), "since": since.isoformat() if since else None,
            "tenant": tenant, "target_precision": target, "min_reviewed": min_reviewed,
            "current_policy_version": policy.version if policy is not None else None,
            "labels": labels, "judge": judge_agreement(engine, since, tenant)}
