"""Fixtures of the judge tests: a store with conversations (stored by the real Processor, so
their text is redacted), classifier findings written through the real sink, and a judge on
the scripted endpoint (tests/judge/scripted_judge.py: a test double, since no real LLM runs
here)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text

from pipeline.ingest.events import RawRecord
from pipeline.judge.follow import judge_window
from pipeline.judge.rubric import Rubric, resolve
from pipeline.judge.runner import Judge, JudgeOptions, JudgeReport
from pipeline.judge.select import Rule, Window
from pipeline.metrics import PipelineMetrics
from pipeline.policy.engine import Policy
from pipeline.probe.client import Endpoint, RetryPolicy
from pipeline.store.sink import Sink, stable_id, turn_id
from tests.judge.scripted_judge import ScriptedJudge

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
FAST = RetryPolicy(retries=2, backoff_s=0.01, timeout_s=5.0)


def conversation(cid: str, user: str, reply: str, minute: int = 0, bot: str = "bot-a"
                 ) -> list[dict[str, Any]]:
    ts = T0 + timedelta(minutes=minute)
    return [{"conversation_id": cid, "turn": 0, "role": "user", "text": user,
             "ts": ts.isoformat(), "bot_id": bot},
            {"conversation_id": cid, "turn": 1, "role": "assistant", "text": reply,
             "ts": (ts + timedelta(seconds=30)).isoformat(), "bot_id": bot}]


def conversations(n: int, prefix: str = "c") -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        out += conversation(f"{prefix}{i:04d}", f"My order {i} has not arrived and I'm upset.",
                            f"Sorry about order {i}. It ships tomorrow by courier {i % 7}.",
                            minute=i)
    return out


@pytest.fixture
def store(sqlite_url: str, make_processor: Callable[..., Any]) -> Callable[..., str]:
    """``store(events)`` stores turns through the real Processor (PII suite: redacted text)
    and returns the database URL."""
    proc = make_processor(sqlite_url)

    def put(events: Sequence[dict[str, Any]]) -> str:
        records = [RawRecord("test", str(i), e) for i, e in enumerate(events)]
        proc.process(records)
        return sqlite_url

    return put


def add_findings(url: str, rows: Sequence[tuple[str, int, str, float, bool, dict[str, Any]]]
                 ) -> None:
    """Classifier findings (conversation, turn, label, score, flagged, evidence), written
    through the sink as a detector's would be."""
    engine = create_engine(url)
    with engine.connect() as conn:
        ts = {(r.conversation_id, r.turn): r.ts for r in conn.execute(
            text("select conversation_id, turn, ts from turns"))}
    out = []
    for cid, turn, label, score, flagged, evidence in rows:
        tid = turn_id(cid, turn)
        det = label.split(".", 1)[0]
        out.append(dict(id=stable_id("finding", tid, det, "t", label, None), turn_id=tid,
                        conversation_id=cid, turn=turn, role="assistant",
                        ts=datetime.fromisoformat(str(ts[(cid, turn)])).replace(tzinfo=UTC),
                        bot_id="bot-a", model="", tenant="", detector=det,
                        detector_version="t", label=label, score=score, flagged=flagged,
                        span_start=None, span_end=None, evidence=evidence, excerpt="",
                        run_id=None, created_at=datetime.now(UTC), suppressed=False,
                        suppressed_by=None, policy_version="t"))
    Sink(engine).write((), out, ())
    engine.dispose()


def make_judge(url: str, endpoint_url: str, rubrics: Sequence[str] = ("epitome_er",),
               model: str = "judge-1", metrics: PipelineMetrics | None = None,
               rubric_objects: Sequence[Rubric] | None = None, **options: Any) -> Judge:
    opts = {"sample_rate": 1.0, "rules": (), "retry": FAST, **options}
    engine: Engine = create_engine(url)
    endpoint = Endpoint(endpoint_url, model, temperature=0.0, max_tokens=200,
                        extra=(("seed", 0),))
    return Judge(engine, endpoint, list(rubric_objects or resolve(list(rubrics))),
                 JudgeOptions(**opts), Policy(), None, str(uuid.uuid4()), metrics)


def judge_all(url: str, endpoint_url: str, **kwargs: Any) -> JudgeReport:
    judge = make_judge(url, endpoint_url, **kwargs)
    try:
        return judge_window(judge, Window())
    finally:
        judge.engine.dispose()


def judge_rows(url: str) -> list[Any]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = list(conn.execute(text(
            "select conversation_id, turn, label, score, flagged, evidence, detector_version "
            "from findings where detector = 'judge' order by conversation_id, turn, label")))
    engine.dispose()
    return rows


def dead_letters(url: str) -> list[Any]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = list(conn.execute(text("select reason, detail, conversation_id, turn, detector "
                                      "from dead_letters order by conversation_id")))
    engine.dispose()
    return rows


@pytest.fixture
def judge_server() -> Iterator[ScriptedJudge]:
    with ScriptedJudge() as server:
        yield server


__all__ = ["Rule", "conversation", "conversations"]
