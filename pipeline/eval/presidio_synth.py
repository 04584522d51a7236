"""``chatmon eval presidio-synth PATH``: span-level PII quality on presidio-research data.

The folder holds ``synth_dataset_v2.json`` as published (a JSON list of records with ``full_text``
and ``spans`` of ``{entity_type, start_position, end_position}``, end exclusive).

Entity mapping (the set's names -> ours):

- ``PERSON`` -> ``PERSON``; ``EMAIL_ADDRESS``, ``PHONE_NUMBER``, ``CREDIT_CARD``, ``IBAN_CODE``,
  ``US_SSN``, ``IP_ADDRESS`` -> the same names;
- ``GPE`` (cities, countries) -> ``LOCATION``;
- ``STREET_ADDRESS`` -> ``STREET_ADDRESS``. The set labels address *pieces* (a building number, a
  street, "Suite 501", a trailing postcode) as separate ``STREET_ADDRESS`` spans; we predict one
  span per address block, which overlaps (and so finds) each piece.
- Not scored: ``ORGANIZATION``, ``DATE_TIME``, ``TITLE``, ``AGE``, ``NRP``, ``ZIP_CODE``,
  ``DOMAIN_NAME``, ``US_DRIVER_LICENSE`` (not PII on their own, or not in our entity list). Their
  gold spans are dropped; a prediction of ours that lands on one of them counts as a false
  positive like any other prediction without a same-type gold span.

Matching is by overlap: a gold span is found when a flagged prediction of the same type overlaps
it; a prediction is correct when it overlaps a gold span of its type. One exception, stated here
and reported separately under ``detail.strict``: a gold ``LOCATION`` (a city or country line)
that lies inside a predicted ``STREET_ADDRESS`` block counts as found, since the flagged address
span covers it and redaction removes it. Micro recall, precision and F1 pool all scored types.
A prediction is "flagged" when its score reaches the shipped policy threshold for its label.

``detail.at_cut`` is what a team sees per sentence at the shipped thresholds
(``pipeline.eval.core.at_cut``): ``recall_at_cut`` (sentences with a scored PII span that get a
flag), ``fpr_at_cut`` (PII-free sentences, or ones whose only spans are unscored types, that
get one) and ``precision_at_cut``; ``n_pos`` / ``n_neg`` say what they count over.

``detail.grouped_cv`` holds the numbers to trust: a five-fold cross-validation grouped by the
set's ``template_id``, in which no template is both tuned on and scored
(``pipeline.eval.presidio_cv``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from detectors import registry
from detectors.base import Finding
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, at_cut, require
from pipeline.eval.presidio_cv import ScoredSpan, grouped_cv
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts, simple_input
from pipeline.settings import Settings

FILE = "synth_dataset_v2.json"
ENTITY_MAP: dict[str, str] = {
    "PERSON": "PERSON",
    "EMAIL_ADDRESS": "EMAIL_ADDRESS",
    "PHONE_NUMBER": "PHONE_NUMBER",
    "CREDIT_CARD": "CREDIT_CARD",
    "IBAN_CODE": "IBAN_CODE",
    "US_SSN": "US_SSN",
    "IP_ADDRESS": "IP_ADDRESS",
    "GPE": "LOCATION",
    "STREET_ADDRESS": "STREET_ADDRESS",
}
SCORED = tuple(sorted(set(ENTITY_MAP.values())))
Span = tuple[int, int, str]  # start, end, entity


def load_records(path: Path) -> list[tuple[str, list[Span]]]:
    """(text, gold spans mapped onto our entity names) per record."""
    (file,) = require(path, FILE)
    try:
        rows = json.loads(file.read_text(encoding="utf-8"))
        out = []
        for row in rows:
            gold = [
                (int(s["start_position"]), int(s["end_position"]), ENTITY_MAP[s["entity_type"]])
                for s in row.get("spans") or []
                if s["entity_type"] in ENTITY_MAP
            ]
            out.append((str(row["full_text"]), gold))
    except (ValueError, KeyError, TypeError) as exc:
        raise EvalDataError(f"{file}: not in the presidio-research layout ({exc})") from exc
    return out


def load_groups(path: Path) -> list[str]:
    """The ``template_id`` of each record, as a string (the folds of the grouped CV)."""
    (file,) = require(path, FILE)
    try:
        return [str(row["template_id"]) for row in json.loads(file.read_text(encoding="utf-8"))]
    except (ValueError, KeyError, TypeError) as exc:
        raise EvalDataError(f"{file}: records without template_id ({exc})") from exc


def scored_spans(findings: Iterable[Finding]) -> list[ScoredSpan]:
    """Every per-entity prediction (not leaks) with its score, flagged or not."""
    return [(f.span[0], f.span[1], str(f.evidence["entity"]), f.score) for f in findings
            if f.span is not None and f.evidence.get("entity") in SCORED
            and f.label != "pii.leak"]


def flagged_spans(findings: Iterable[Finding], overrides: dict[str, float]) -> list[Span]:
    """Predicted spans: per-entity findings (not leaks) at or above their policy threshold."""
    return [(s, e, ent) for s, e, ent, sc in scored_spans(findings)
            if sc >= threshold(f"pii.{ent.lower()}", overrides)]


def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _found(g: Span, pred: Sequence[Span], lenient: bool) -> bool:
    if any(p[2] == g[2] and _overlaps(p, g) for p in pred):
        return True
    return lenient and g[2] == "LOCATION" and any(
        p[2] == "STREET_ADDRESS" and p[0] <= g[0] and g[1] <= p[1] for p in pred
    )


def count(gold: Sequence[Span], pred: Sequence[Span], lenient: bool = True) -> Counter[str]:
    """Counts ``tp_gold|<E>``, ``gold|<E>``, ``tp_pred|<E>``, ``pred|<E>`` for one text."""
    c: Counter[str] = Counter()
    for g in gold:
        c[f"gold|{g[2]}"] += 1
        c[f"tp_gold|{g[2]}"] += _found(g, pred, lenient)
    for p in pred:
        c[f"pred|{p[2]}"] += 1
        c[f"tp_pred|{p[2]}"] += any(g[2] == p[2] and _overlaps(p, g) for g in gold)
    return c


def prf(c: Counter[str], entities: Sequence[str]) -> dict[str, float]:
    gold = sum(c[f"gold|{e}"] for e in entities)
    pred = sum(c[f"pred|{e}"] for e in entities)
    recall = sum(c[f"tp_gold|{e}"] for e in entities) / gold if gold else float("nan")
    precision = sum(c[f"tp_pred|{e}"] for e in entities) / pred if pred else float("nan")
    if recall != recall and precision != precision:  # no gold and no prediction: undefined
        return {"recall": recall, "precision": precision, "f1": float("nan")}
    r, p = (0.0 if v != v else v for v in (recall, precision))
    f1 = 2 * r * p / (r + p) if r + p > 0 else 0.0
    return {"recall": recall, "precision": precision, "f1": f1}


def _rounded(d: dict[str, float]) -> dict[str, float | None]:
    return {k: (None if v != v else round(v, 4)) for k, v in d.items()}


def evaluate(path: Path, settings: Settings) -> EvalResult:
    records = load_records(path)
    if not records:
        raise EvalDataError(f"{path / FILE}: no records")
    detector = registry.create("pii", settings.detector_options.get("pii", {}))
    detector.load()
    items = [simple_input(text, role="user", conversation_id=str(i))
             for i, (text, _) in enumerate(records)]
    findings = score_texts(detector, items, batch_size=settings.batch_size)
    shipped = {e: threshold(f"pii.{e.lower()}", settings.thresholds) for e in SCORED}
    lenient: Counter[str] = Counter()
    strict: Counter[str] = Counter()
    has_pii: list[int] = []
    flagged: list[float] = []
    for (_, gold), found in zip(records, findings, strict=True):
        pred = flagged_spans(found, settings.thresholds)
        lenient += count(gold, pred, lenient=True)
        strict += count(gold, pred, lenient=False)
        has_pii.append(int(bool(gold)))
        flagged.append(float(bool(pred)))
    per_entity: dict[str, Any] = {
        e: {**_rounded(prf(lenient, [e])), "n_gold": lenient[f"gold|{e}"],
            "n_pred": lenient[f"pred|{e}"]}
        for e in SCORED
    }
    detail = {
        "per_entity": per_entity,
        "strict": _rounded(prf(strict, SCORED)),
        "at_cut": {**_rounded(at_cut(has_pii, flagged, 1.0)), "n_pos": sum(has_pii),
                   "n_neg": len(has_pii) - sum(has_pii)},
        "thresholds": {f"pii.{e.lower()}": v for e, v in shipped.items()},
        "model": getattr(detector, "model", None),
        "grouped_cv": grouped_cv([g for _, g in records], [scored_spans(f) for f in findings],
                                 load_groups(path), SCORED, shipped, count, prf),
    }
    return EvalResult("presidio-synth", "pii", len(records), prf(lenient, SCORED), detail)
