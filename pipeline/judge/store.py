"""The judge's rows: findings and dead letters (through the pipeline's idempotent sink), the
answer cache, daily usage and follow cursors."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select, update

from detectors.base import Finding, Turn
from pipeline.judge.prompt import Message, Verdict
from pipeline.judge.rubric import Rubric
from pipeline.judge.select import JUDGE, Candidate
from pipeline.policy.engine import Policy
from pipeline.scoring.redaction import excerpt
from pipeline.store.models import FindingRow, JudgeCacheRow, JudgeCursorRow, JudgeUsageRow
from pipeline.store.sink import insert_ignore, stable_id, store_error

# The dead-letter reason of a reply the judge could not rate (an unusable answer twice, or a
# request the endpoint refused): counted, stored with the reason, never guessed.
JUDGE_FAILED = "judge_failed"


def detector_version(rubric: Rubric, model: str) -> str:
    """``criterion@version/model``, hashed when too long for the column: findings of another
    rubric version or judge model are new findings, never merged with the old ones."""
    text = f"{rubric.key}/{model}"
    if len(text) <= 64:
        return text
    return f"{text[:47]}~{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def finding_id(turn_id: str, rubric: Rubric, model: str) -> str:
    # The form Processor gives every finding (span None).
    return stable_id("finding", turn_id, JUDGE, detector_version(rubric, model), rubric.label,
                     None)


def cache_key(rubric: Rubric, model: str, sent: Sequence[Message]) -> str:
    """(rubric and version, judge model, the redacted messages exactly as sent)."""
    body = json.dumps([rubric.key, model, list(sent)], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def existing(engine: Engine, ids: Sequence[str]) -> set[str]:
    out: set[str] = set()
    try:
        with engine.connect() as conn:
            for i in range(0, len(ids), 500):
                out |= set(conn.scalars(select(FindingRow.id)
                                        .where(FindingRow.id.in_(ids[i:i + 500]))))
    except Exception as exc:
        raise store_error("cannot read judge findings", exc) from exc
    return out


def cached(engine: Engine, keys: Sequence[str]) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    with engine.connect() as conn:
        for i in range(0, len(keys), 500):
            q = select(JudgeCacheRow.id, JudgeCacheRow.rating, JudgeCacheRow.reason).where(
                JudgeCacheRow.id.in_(keys[i:i + 500]))
            out.update({r.id: Verdict(int(r.rating), r.reason) for r in conn.execute(q)})
    return out


def cache_row(key: str, rubric: Rubric, model: str, verdict: Verdict,
              tokens: int | None, conversation_id: str) -> dict[str, Any]:
    """The cached answer, tied to the conversation it was first asked for, so that purging
    that conversation removes it (``chatmon purge`` clears every table's rows by
    ``conversation_id``)."""
    return dict(id=key, conversation_id=conversation_id, rubric=rubric.key, model=model[:200],
                rating=verdict.rating, reason=verdict.reason, tokens=tokens,
                created_at=datetime.now(UTC))


def finding_row(c: Candidate, rubric: Rubric, model: str, verdict: Verdict, policy: Policy,
                run_id: str | None) -> dict[str, Any]:
    score = rubric.score(verdict.rating)
    version = detector_version(rubric, model)
    evidence = {"rating": verdict.rating, "scale": [rubric.scale.min, rubric.scale.max],
                "rubric": rubric.criterion, "rubric_version": rubric.version, "model": model,
                "compare_to": rubric.compare_to, "reason": verdict.reason}
    turn = Turn(c.conversation_id, c.turn, "assistant", c.text, c.ts, c.bot_id or None,
                c.model or None, c.tenant or None, c.lang)
    decision = policy.decide(Finding(JUDGE, version, rubric.label, score, None, evidence), turn)
    return dict(
        id=finding_id(c.turn_id, rubric, model), turn_id=c.turn_id,
        conversation_id=c.conversation_id, turn=c.turn, role="assistant", ts=c.ts,
        bot_id=c.bot_id, model=c.model, tenant=c.tenant, detector=JUDGE,
        detector_version=version, label=rubric.label, score=score, flagged=decision.flagged,
        span_start=None, span_end=None, evidence=evidence,
        excerpt=excerpt(c.text, lambda i: i, None), run_id=run_id,
        created_at=datetime.now(UTC), suppressed=decision.suppressed_by is not None,
        suppressed_by=decision.suppressed_by, policy_version=policy.version)


def dead_letter_row(c: Candidate, rubric: Rubric, model: str, detail: str,
                    run_id: str | None) -> dict[str, Any]:
    source = f"judge {rubric.key} {model}"[:500]
    return dict(id=stable_id("dead", source, c.turn_id, JUDGE_FAILED, JUDGE),
                reason=JUDGE_FAILED, detail=detail[:500], source=source, position=c.turn_id,
                raw_excerpt="", detector=JUDGE, conversation_id=c.conversation_id, turn=c.turn,
                run_id=run_id, created_at=datetime.now(UTC))


def put_cache(engine: Engine, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        with engine.begin() as conn:
            conn.execute(insert_ignore(engine.dialect.name, JudgeCacheRow.__table__),  # type: ignore[arg-type]
                         list(rows))


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def tokens_used(engine: Engine, day: str, model: str) -> int:
    with engine.connect() as conn:
        value = conn.scalar(select(JudgeUsageRow.tokens)
                            .where(JudgeUsageRow.id == stable_id("judge-usage", day, model)))
    return int(value or 0)


def add_usage(engine: Engine, day: str, model: str, requests: int, tokens: int) -> None:
    """Adds to the day's row in the database (not read-modify-write: judge processes that
    share the store add up)."""
    rid = stable_id("judge-usage", day, model)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(insert_ignore(engine.dialect.name, JudgeUsageRow.__table__),  # type: ignore[arg-type]
                     [dict(id=rid, day=day, model=model[:200], requests=0, tokens=0,
                           updated_at=now)])
        conn.execute(update(JudgeUsageRow).where(JudgeUsageRow.id == rid).values(
            requests=JudgeUsageRow.requests + requests, tokens=JudgeUsageRow.tokens + tokens,
            updated_at=now))


def get_cursor(engine: Engine, name: str) -> tuple[datetime, str] | None:
    with engine.connect() as conn:
        row = conn.execute(select(JudgeCursorRow.stored_at, JudgeCursorRow.turn_id)
                           .where(JudgeCursorRow.id == name)).first()
    return (row.stored_at, row.turn_id) if row else None


def set_cursor(engine: Engine, name: str, position: tuple[datetime, str]) -> None:
    now = datetime.now(UTC)
    with engine.begin() as conn:
        done = conn.execute(update(JudgeCursorRow).where(JudgeCursorRow.id == name).values(
            stored_at=position[0], turn_id=position[1], updated_at=now)).rowcount
        if not done:
            conn.execute(insert_ignore(engine.dialect.name, JudgeCursorRow.__table__),  # type: ignore[arg-type]
                         [dict(id=name, stored_at=position[0], turn_id=position[1],
                               updated_at=now)])
