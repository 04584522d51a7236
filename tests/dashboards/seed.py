"""A small deterministic store for dashboard, report and validation tests: rows inserted through
the models (running the real detectors takes minutes on these machines), with evidence in the
shapes the detectors store (checked against a real `chatmon run` of examples/transcripts.jsonl).

Three bots, two model versions, 2026-11-02 .. 2026-11-20 (three ISO weeks), user and assistant
turns, findings of every kind the weekly dashboard reads, a few validation results, and reviews
of some findings by two reviewers.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, insert

from pipeline.store.models import ReviewRow, ValidationResultRow
from pipeline.store.sink import Sink, stable_id, turn_id

START = datetime(2026, 11, 2, 8, tzinfo=UTC)
END = datetime(2026, 11, 21, tzinfo=UTC)
BOTS = (("helpdesk-a", "acme"), ("helpdesk-b", "acme"), ("care-c", "globex"))
PHRASES = ("thank you for reaching out", "i understand how frustrating this is")
EMPATHIC_PHRASES = frozenset(PHRASES[1:])
SEQUENCES = ("apology>info", "reassurance>advice")
GROUPS = (("age", "65+"), ("disability", "deaf"), ("religion", "muslim"))
HARMS = (("toxicity", "toxicity.insult"), ("bias", "bias.stereotype"),
         ("manipulation", "manipulation.guilt_tripping"), ("pii", "pii.leak"))


def _model(bot: str, ts: datetime) -> str:
    return "support-llm-2026-11" if bot == "helpdesk-a" and ts.day >= 12 else "support-llm-2026-09"


def _turn(conv: str, n: int, role: str, ts: datetime, bot: str, tenant: str) -> dict[str, Any]:
    text = f"[{role} turn {n}]"
    return {"id": turn_id(conv, n), "conversation_id": conv, "turn": n, "role": role, "ts": ts,
            "bot_id": bot, "model": _model(bot, ts), "tenant": tenant, "lang": "en",
            "text_redacted": text, "content_hash": stable_id(text), "n_chars": len(text),
            "metadata": {}, "text_raw": None, "raw_expires_at": None, "run_id": "seed",
            "stored_at": ts}


def _finding(turn: dict[str, Any], label: str, score: float, flagged: bool,
             evidence: dict[str, Any]) -> dict[str, Any]:
    keys = ("conversation_id", "turn", "role", "ts", "bot_id", "model", "tenant")
    return {"id": stable_id("f", turn["id"], label), "turn_id": turn["id"],
            **{k: turn[k] for k in keys}, "detector": label.split(".")[0],
            "detector_version": "seed", "label": label, "score": round(score, 4),
            "flagged": flagged, "span_start": None, "span_end": None, "evidence": evidence,
            "excerpt": "[excerpt]", "run_id": "seed", "created_at": turn["ts"]}


def _empathy(rng: random.Random, turn: dict[str, Any]) -> dict[str, Any]:
    levels = {k: rng.choice((0, 0, 1, 2)) for k in ("er", "ip", "ex")}
    score = min(1.0, 0.15 + 0.2 * sum(levels.values()) + rng.random() * 0.1)
    evidence = {**{k: {"level": v, "score": round(0.3 * v + 0.1, 3)} for k, v in levels.items()},
                "alignment": round(rng.uniform(0.4, 1.0), 3), "user_emotion": "sad",
                "tactic_sequence": ["apology", "information"], "length_normalised": 0.3,
                "cause_addressed": round(rng.random(), 3)}
    # The scores are measurements (never flagged since issue 27); the failure is empathy.missed.
    return _finding(turn, "empathy.score", score, False, evidence)


def _missed(turn: dict[str, Any], score: float) -> dict[str, Any]:
    return _finding(turn, "empathy.missed", 1.0 - score, score < 0.3,
                    {"user_emotion": "sadness", "user_upset_p": 0.9})


def _assistant_findings(rng: random.Random, turn: dict[str, Any]) -> list[dict[str, Any]]:
    empathy = _empathy(rng, turn)
    out = [empathy, _missed(turn, empathy["score"]),
           _finding(turn, "repetition.window", 0.01, False, {
        "replies": 20, "distinct_1": 0.8, "distinct_2": round(rng.uniform(0.6, 1.0), 3),
        "compression_ratio": 1.1, "top_opener_share": round(rng.random() * 0.5, 3),
        "near_duplicate_share": 0.1, "template_share": 0.4})]
    if rng.random() < 0.3:
        phrase = rng.choice(PHRASES)
        # an empathy formula is flagged stock_empathy; a script stays an unflagged stock_phrase
        empathic = phrase in EMPATHIC_PHRASES
        out.append(_finding(turn, "repetition.stock_empathy" if empathic
                            else "repetition.stock_phrase", 1.0, empathic, {
            "phrase": phrase, "conversations": 3, "replies": 5, "share": round(rng.random(), 4),
            **({"formula": "must_be"} if empathic else {})}))
    if rng.random() < 0.15:
        sim = rng.uniform(0.6, 0.95)
        out.append(_finding(turn, "repetition.near_duplicate", sim, sim > 0.8, {
            "similarity": round(sim, 4), "conversation_id": "conv-x", "turn": 1}))
    if rng.random() < 0.2:
        out.append(_finding(turn, "repetition.template_sequence", 0.2, False, {
            "sequence": rng.choice(SEQUENCES), "share": round(rng.random(), 4), "replies": 25}))
    for _detector, label in HARMS:
        if rng.random() < 0.08:
            out.append(_finding(turn, label, 0.9, True, {"cue": "seeded"}))
    return out


def _user_findings(rng: random.Random, turn: dict[str, Any]) -> list[dict[str, Any]]:
    if rng.random() < 0.25:
        category, group = rng.choice(GROUPS)
        return [_finding(turn, "bias.user_group", 0.8, True,
                         {"category": category, "group": group, "cue": "self_i_am_adj"})]
    return []


def rows(n_conversations: int = 90, seed: int = 7) -> tuple[list[dict[str, Any]], ...]:
    rng = random.Random(seed)
    turns: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    span = (END - START).total_seconds() - 3600
    for c in range(n_conversations):
        bot, tenant = BOTS[c % len(BOTS)]
        conv = f"conv-{c:04d}"
        t0 = START + timedelta(seconds=span * c / n_conversations)
        for n in range(4):
            role = "user" if n % 2 == 0 else "assistant"
            turn = _turn(conv, n, role, t0 + timedelta(minutes=2 * n), bot, tenant)
            turns.append(turn)
            make = _assistant_findings if role == "assistant" else _user_findings
            findings.extend(make(rng, turn))
    return turns, findings + judge_rows(findings)


def judge_rows(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """chatmon judge's judge.empathy (1-5, compared with empathy.score as the shipped rubric
    is) on every other reply (its own random stream, so the rows above stay as they were): the
    judge's rating is the classifier's score placed on 1-5, or a neighbour, except in a share
    of replies where it is two or more levels away; that share grows in the last week, the
    drift the judge-agreement panel and figure show."""
    rng = random.Random(11)
    out = []
    for i, f in enumerate(x for x in findings if x["label"] == "empathy.score"):
        if i % 2:
            continue
        late = f["ts"] >= END - timedelta(days=6)
        level = 1 + round(f["score"] * 4)
        if rng.random() < (0.3 if late else 0.9):
            rating = min(5, max(1, level + rng.choice((-1, 0, 0, 1))))
        else:
            rating = rng.choice([r for r in range(1, 6) if abs(r - level) >= 2])
        turn = {**f, "id": f["turn_id"]}
        out.append(_finding(turn, "judge.empathy", (rating - 1) / 4, rating >= 3, {
            "rating": rating, "scale": [1, 5], "rubric": "empathy", "rubric_version": "1",
            "model": "judge-seed", "compare_to": "empathy.score", "reason": "seeded"}))
    return out


def validation_rows() -> list[dict[str, Any]]:
    out = []
    for day in range(3):
        when = datetime(2026, 11, 18 + day, 6, tzinfo=UTC)
        for expectation, ok in (("expect_column_values_to_be_between", True),
                                ("expect_column_values_to_not_be_null", day != 1)):
            out.append({"id": stable_id("v", when, expectation), "validation_id": f"v{day}",
                        "checked_at": when, "suite": "store.findings", "source": "store",
                        "expectation": expectation, "column_name": "score", "success": ok,
                        "unexpected_count": 0 if ok else 3, "observed": {"unexpected_count": 0}})
    return out


def review_rows(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every third harm or empathy.score finding reviewed by "ann" (who disagrees with every
    fourth flag), every sixth also by "bob" (who agrees with every flag)."""
    out = []
    judged = [f for f in findings if f["detector"] in ("toxicity", "bias", "manipulation", "pii")
              or f["label"] == "empathy.score"]
    for i, f in enumerate(judged[::3]):
        people = [("ann", f["flagged"] != (i % 4 == 0))]
        if i % 2 == 0:
            people.append(("bob", f["flagged"]))
        for reviewer, present in people:
            out.append({"id": stable_id("review", f["id"], reviewer), "finding_id": f["id"],
                        "reviewer": reviewer, "present": present, "rating": None, "note": "",
                        "source": "seed", "imported_at": f["ts"]})
    return out


def seed_store(engine: Engine, n_conversations: int = 90) -> tuple[int, int]:
    """Write the rows into a migrated store through the sink (so with their rollups, as a run
    writes them); returns (turns, findings) counts."""
    turns, findings = rows(n_conversations)
    Sink(engine).write(turns, findings)
    with engine.begin() as conn:
        conn.execute(insert(ValidationResultRow), validation_rows())
        conn.execute(insert(ReviewRow), review_rows(findings))
    return len(turns), len(findings)
