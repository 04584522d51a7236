"""Agreement of the judge with the classifiers and with people, per judge label and model
(``chatmon review agreement``'s ``judge`` rows; docs/judge.md).

- judge vs classifier: every judged reply that also has the rubric's ``compare_to`` finding.
  On the rubric's scale: the classifier's level there (``evidence.level`` where the detector
  rates levels on that scale, as the empathy mechanisms do; else its score placed on the
  scale) against the judge's rating: agreement (``agrees``: the same level, or within one on
  scales of five levels or more), quadratic-weighted kappa and Krippendorff's alpha (ordinal)
  for scales of three levels or more, alpha on flags (nominal) for two-level ones. On flags:
  Cohen's kappa, which says something only where the classifier's label is flagged by policy
  (manipulation); empathy's scores are never flagged (only its failures are).
- judge vs people: every review of a finding of the judged reply whose label the rubric
  compares to (or of the judge's own finding): the judge's flag against ``present``, and its
  rating against the reviewer's 0-2 ``rating`` where the rubric rates 0-2 (the EPITOME
  mechanisms). Two reviewers of one reply count twice. Agreement is on the scale where every
  pair has a reviewer's rating, else on flags.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, select

from pipeline.judge.select import JUDGE
from pipeline.review.stats import alpha_two, kappa
from pipeline.store.models import FindingRow, ReviewRow

Group = tuple[str, str, str]  # judge label, judge model, what it is compared with


@dataclass(frozen=True, slots=True)
class Judged:
    id: str
    turn_id: str
    label: str
    model: str
    compare_to: str | None
    flagged: bool
    rating: int
    scale: tuple[int, int]


def on_scale(scale: tuple[int, int], score: float, level: int | None) -> int:
    """A classifier finding's level on a rubric's scale: its own ``level`` where it rates on
    that scale, else its score in [0, 1] placed on it."""
    lo, hi = scale
    if level is not None and lo <= level <= hi:
        return level
    return lo + round(min(1.0, max(0.0, score)) * (hi - lo))


def agrees(scale: tuple[int, int], a: int, b: int) -> bool:
    """Two ratings agree when they are the same level, or within one level on scales of five
    levels or more (1-5), where neighbouring levels are a matter of degree. The weekly panel's
    SQL (``dashboards.queries.JUDGE_AGREEMENT_WEEKLY``) says the same."""
    return abs(a - b) <= (1 if scale[1] - scale[0] >= 4 else 0)


@dataclass
class Pairs:
    scale: tuple[int, int]
    flags: list[tuple[bool, bool]] = field(default_factory=list)
    ratings: list[tuple[int, int]] = field(default_factory=list)

    def row(self, group: Group) -> dict[str, Any]:
        label, model, other = group
        ordinal = self.scale[1] - self.scale[0] > 1
        a, b = [x for x, _ in self.flags], [y for _, y in self.flags]
        ra, rb = [x for x, _ in self.ratings], [y for _, y in self.ratings]
        n = len(self.flags)
        return {
            "judge_label": label, "model": model, "compared_with": other, "n": n,
            "scale": f"{self.scale[0]}-{self.scale[1]}",
            "agreement": self._agreement(),
            "kappa": kappa(a, b),
            "rated": len(self.ratings),
            "kappa_quadratic": kappa(ra, rb, "quadratic") if ordinal else None,
            "alpha": (alpha_two(ra, rb, "ordinal") if ordinal
                      else alpha_two([float(x) for x in a], [float(y) for y in b], "nominal")),
        }

    def _agreement(self) -> float | None:
        if self.ratings and len(self.ratings) == len(self.flags):
            agree = sum(agrees(self.scale, x, y) for x, y in self.ratings)
        else:
            agree = sum(x == y for x, y in self.flags)
        return round(agree / len(self.flags), 4) if self.flags else None


def _judged(engine: Engine, since: datetime | None, tenant: str | None) -> list[Judged]:
    q = select(FindingRow.id, FindingRow.turn_id, FindingRow.label, FindingRow.flagged,
               FindingRow.evidence).where(FindingRow.detector == JUDGE)
    if since is not None:
        q = q.where(FindingRow.ts >= since)
    if tenant is not None:
        q = q.where(FindingRow.tenant == tenant)
    out = []
    with engine.connect() as conn:
        for r in conn.execute(q.order_by(FindingRow.id)):
            ev = r.evidence or {}
            scale = ev.get("scale") or [0, 1]
            out.append(Judged(r.id, r.turn_id, r.label, str(ev.get("model", "")),
                              ev.get("compare_to"), bool(r.flagged), int(ev.get("rating", 0)),
                              (int(scale[0]), int(scale[1]))))
    return out


def _on_turns(engine: Engine, turn_ids: Sequence[str], what: Any) -> list[Any]:
    out: list[Any] = []
    with engine.connect() as conn:
        for i in range(0, len(turn_ids), 500):
            out += conn.execute(what.where(FindingRow.turn_id.in_(turn_ids[i:i + 500])))
    return out


def judge_agreement(engine: Engine, since: datetime | None = None,
                    tenant: str | None = None) -> dict[str, list[dict[str, Any]]]:
    judged = _judged(engine, since, tenant)
    turns = sorted({j.turn_id for j in judged})
    by_turn: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        by_turn[j.turn_id].append(j)
    classifier = _on_turns(engine, turns, select(
        FindingRow.turn_id, FindingRow.label, FindingRow.score, FindingRow.flagged,
        FindingRow.evidence).where(FindingRow.detector != JUDGE))
    reviews = _on_turns(engine, turns, select(
        FindingRow.id, FindingRow.turn_id, FindingRow.label, ReviewRow.present,
        ReviewRow.rating).join(ReviewRow, ReviewRow.finding_id == FindingRow.id))
    vs_classifier: dict[Group, Pairs] = {}
    for c in classifier:
        for j in by_turn[c.turn_id]:
            if j.compare_to == c.label:
                p = vs_classifier.setdefault((j.label, j.model, c.label), Pairs(j.scale))
                level = (c.evidence or {}).get("level")
                p.flags.append((j.flagged, bool(c.flagged)))
                p.ratings.append((j.rating, on_scale(j.scale, float(c.score),
                                                     level if isinstance(level, int) else None)))
    vs_people: dict[Group, Pairs] = {}
    for r in reviews:
        for j in by_turn[r.turn_id]:
            if j.compare_to == r.label or j.id == r.id:
                p = vs_people.setdefault((j.label, j.model, f"people on {r.label}"),
                                         Pairs(j.scale))
                p.flags.append((j.flagged, bool(r.present)))
                if r.rating is not None and j.scale == (0, 2):
                    p.ratings.append((j.rating, int(r.rating)))
    return {"vs_classifier": [p.row(g) for g, p in sorted(vs_classifier.items())],
            "vs_people": [p.row(g) for g, p in sorted(vs_people.items())]}
