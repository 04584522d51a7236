"""Store reviews: one row per finding and reviewer, idempotent.

The id is derived from the finding and the reviewer, so importing a file twice adds nothing and
a reviewer who changes an answer replaces their earlier one (counted as updated). Unknown
finding ids, a label that is not the finding's, contradictions and repeated lines are
per-line errors; the good lines of the same batch are stored. Notes are free text a person
typed, so they are redacted like transcripts before they are stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select, update
from sqlalchemy.exc import SQLAlchemyError

from pipeline.errors import SinkError
from pipeline.review.lines import LineError, Review, Unrated, contradiction
from pipeline.scoring.redaction import redact
from pipeline.store.models import FindingRow, ReviewRow
from pipeline.store.sink import insert_ignore, stable_id

_CHUNK = 500
NoteRedactor = Callable[[list[str]], list[str]]


@dataclass
class ImportResult:
    stored: int = 0
    updated: int = 0
    unchanged: int = 0
    unrated: int = 0
    errors: list[LineError] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"stored": self.stored, "updated": self.updated, "unchanged": self.unchanged,
                "unrated": self.unrated, "errors": [e.as_dict() for e in self.errors]}


def review_id(finding_id: str, reviewer: str) -> str:
    return stable_id("review", finding_id, reviewer)


def safety_net(notes: list[str]) -> list[str]:
    """Redaction without the PII detector: e-mail addresses and long digit runs."""
    return [redact(n, [])[0] for n in notes]


def _labels(engine: Engine, ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    with engine.connect() as conn:
        for i in range(0, len(ids), _CHUNK):
            rows = conn.execute(select(FindingRow.id, FindingRow.label)
                                .where(FindingRow.id.in_(ids[i:i + _CHUNK])))
            out.update({r.id: r.label for r in rows})
    return out


def _existing(engine: Engine, ids: Sequence[str]) -> dict[str, tuple[bool, int | None, str]]:
    out: dict[str, tuple[bool, int | None, str]] = {}
    with engine.connect() as conn:
        for i in range(0, len(ids), _CHUNK):
            rows = conn.execute(select(ReviewRow.id, ReviewRow.present, ReviewRow.rating,
                                       ReviewRow.note).where(ReviewRow.id.in_(ids[i:i + _CHUNK])))
            out.update({r.id: (bool(r.present), r.rating, r.note) for r in rows})
    return out


def _check(reviews: Iterable[Review], labels: dict[str, str],
           result: ImportResult) -> dict[str, Review]:
    """The reviews to store, by review id; the others become errors (or, when a line repeats
    an earlier one word for word, are counted unchanged)."""
    kept: dict[str, Review] = {}
    for r in reviews:
        label = labels.get(r.finding_id)
        problem = None
        if label is None:
            problem = (f"unknown finding id {r.finding_id}: not in this store (was the batch "
                       "sampled from another database?)")
        elif r.label is not None and r.label != label:
            problem = f"label {r.label!r} is not the finding's label {label!r}"
        else:
            problem = contradiction(label, r)
        rid = review_id(r.finding_id, r.reviewer)
        earlier = kept.get(rid)
        if problem is None and earlier is not None:
            if (earlier.present, earlier.rating, earlier.note) == (r.present, r.rating, r.note):
                result.unchanged += 1
                continue
            problem = (f"same finding and reviewer as {earlier.index} with another answer; "
                       "keep one")
        if problem is not None:
            result.errors.append(LineError(r.index, problem))
        else:
            kept[rid] = r
    return kept


def store_reviews(engine: Engine, items: Iterable[Review | LineError | Unrated], source: str,
                  redact_notes: NoteRedactor = safety_net) -> ImportResult:
    result = ImportResult()
    reviews: list[Review] = []
    for item in items:
        if isinstance(item, LineError):
            result.errors.append(item)
        elif isinstance(item, Unrated):
            result.unrated += 1
        else:
            reviews.append(item)
    try:
        labels = _labels(engine, sorted({r.finding_id for r in reviews}))
        kept = _check(reviews, labels, result)
        notes = dict(zip(kept, redact_notes([r.note for r in kept.values()]), strict=True))
        _write(engine, kept, notes, source, result)
    except SQLAlchemyError as exc:
        raise SinkError(f"cannot store reviews: {type(exc).__name__}") from exc
    result.errors.sort(key=lambda e: e.index)
    return result


def _write(engine: Engine, kept: dict[str, Review], notes: dict[str, str], source: str,
           result: ImportResult) -> None:
    existing = _existing(engine, list(kept))
    now = datetime.now(UTC)
    new_rows = []
    with engine.begin() as conn:
        for rid, r in kept.items():
            values = dict(present=r.present, rating=r.rating, note=notes[rid])
            before = existing.get(rid)
            if before is None:
                new_rows.append(dict(id=rid, finding_id=r.finding_id, reviewer=r.reviewer,
                                     source=source[:2000], imported_at=now, **values))
            elif before == (r.present, r.rating, notes[rid]):
                result.unchanged += 1
            else:
                conn.execute(update(ReviewRow).where(ReviewRow.id == rid)
                             .values(source=source[:2000], imported_at=now, **values))
                result.updated += 1
        if new_rows:
            # ON CONFLICT DO NOTHING: a concurrent import of the same file adds nothing either.
            conn.execute(insert_ignore(engine.dialect.name, ReviewRow.__table__),  # type: ignore[arg-type]
                         new_rows)
        result.stored += len(new_rows)
