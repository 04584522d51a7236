"""Grouped cross-validation for ``chatmon eval presidio-synth``: no template is both tuned on and
scored.

What is fitted from data in the PII detector is its flagging thresholds (one per label, shipped
in ``pipeline/policy/pii.json``). Each fold's thresholds are re-picked on the *other* folds'
templates (per entity, the cut among the scores seen there that maximises that entity's F1; ties
go to the shipped cut) and applied to the held-out templates; the out-of-fold predictions of all
folds are pooled into micro and per-entity recall / precision. The same folds are also scored
with the shipped thresholds, per fold, to show the spread between templates.

Folds group sentences by the set's ``template_id`` (sentences made from one template share
their phrasing), assigned largest-template-first to the fold with the fewest sentences, so
every fold has about the same number of sentences and the split is deterministic.

What this cannot undo: the hand-written recognizers and cue lists were written by reading
mistakes on the whole dev half (docs/models/pii.md says which), so their wording is in-sample on
every fold. The first-name list and any other data file the detector ships are generated from
Faker's locale lists (``pipeline/training/pii_names.py``), never from this set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

ScoredSpan = tuple[int, int, str, float]  # start, end, entity, score
Span = tuple[int, int, str]
# The set's matching rules live in presidio_synth and are passed in (no import circle):
Tally = Callable[[Sequence[Span], Sequence[Span]], Counter[str]]  # count(gold, pred)
Metrics = Callable[[Counter[str], Sequence[str]], dict[str, float]]  # prf(counts, entities)


def group_folds(groups: Sequence[str], k: int = 5) -> list[int]:
    """Fold index per record: whole groups per fold, largest group first into the smallest fold."""
    sizes = Counter(groups)
    load = [0] * k
    fold_of: dict[str, int] = {}
    for g, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        f = min(range(k), key=lambda i: (load[i], i))
        fold_of[g] = f
        load[f] += n
    return [fold_of[g] for g in groups]


def _cut(preds: Sequence[ScoredSpan], cuts: dict[str, float]) -> list[Span]:
    return [(s, e, ent) for s, e, ent, sc in preds if sc >= cuts.get(ent, 1.01)]


def pick_thresholds(gold: Sequence[Sequence[Span]], preds: Sequence[Sequence[ScoredSpan]],
                    entities: Sequence[str], shipped: dict[str, float], count: Tally,
                    prf: Metrics) -> dict[str, float]:
    """Per entity, the cut that maximises its F1 on these records (ties: nearest the shipped)."""
    out = {}
    for ent in entities:
        cands = sorted({round(p[3], 4) for ps in preds for p in ps if p[2] == ent}
                       | {shipped[ent]})
        best: tuple[float, float, float] | None = None
        for c in cands:
            cuts = {**shipped, ent: c}
            tally: Counter[str] = Counter()
            for g, ps in zip(gold, preds, strict=True):
                tally += count(g, _cut(ps, cuts))
            f1 = prf(tally, [ent])["f1"]
            key = (0.0 if f1 != f1 else f1, -abs(c - shipped[ent]), -c)
            if best is None or key > best:
                best = key
                out[ent] = c
    return out


def grouped_cv(gold: Sequence[Sequence[Span]], preds: Sequence[Sequence[ScoredSpan]],
               groups: Sequence[str], entities: Sequence[str], shipped: dict[str, float],
               count: Tally, prf: Metrics, k: int = 5) -> dict[str, Any]:
    """Out-of-fold metrics (cuts re-picked per fold), and per fold with the shipped cuts."""
    folds = group_folds(groups, k)
    oof: Counter[str] = Counter()
    per_fold: list[dict[str, Any]] = []
    for f in range(k):
        train = [i for i, x in enumerate(folds) if x != f]
        test = [i for i, x in enumerate(folds) if x == f]
        cuts = pick_thresholds([gold[i] for i in train], [preds[i] for i in train],
                               entities, shipped, count, prf)
        held: Counter[str] = Counter()
        at_shipped: Counter[str] = Counter()
        for i in test:
            held += count(gold[i], _cut(preds[i], cuts))
            at_shipped += count(gold[i], _cut(preds[i], shipped))
        oof += held
        per_fold.append({
            "templates": len({groups[i] for i in test}), "n": len(test),
            "thresholds": cuts, "out_of_fold": _r(prf(held, entities)),
            "shipped_thresholds": _r(prf(at_shipped, entities)),
        })
    return {
        "k": k, "grouped_by": "template_id",
        **_r(prf(oof, entities)),
        "per_entity": {e: {**_r(prf(oof, [e])), "n_gold": oof[f"gold|{e}"],
                           "n_pred": oof[f"pred|{e}"]} for e in entities},
        "folds": per_fold,
    }


def _r(d: dict[str, float]) -> dict[str, float | None]:
    return {k: (None if v != v else round(v, 4)) for k, v in d.items()}
