"""A store that stresses the report's layout and statistics: 12 bots, models with 40-character
names, two ISO weeks of replies and a third before them, and user groups of 1, 5 and 50 replies.

What it holds, so that tests can say what must be drawn:

- every bot answers 30 conversations a week with one model; ``helpdesk-north-01`` and
  ``care-line-12`` run two models (the second with 24 and 5 replies this week), and
  ``tiny-pilot-bot-11`` answers only 8 (too few to draw);
- ``helpdesk-north-01`` also answers 50 users who say they are deaf, with empathy 0.25 lower
  than its other replies (a gap larger than chance), 5 who mention their religion and 1 who
  mentions their age (both too few); ``billing-assist-02`` answers 50 users over 65 with the
  same empathy as its other replies (within chance);
- ``payments-concierge-03``'s toxicity jumps from 0 to 12 of 30 replies this week (a change
  larger than chance);
- ``chatmon judge``'s judge.empathy on every other reply (tests/dashboards/seed.py's
  ``judge_rows``), for the classifier-vs-judge agreement figure.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from pipeline.store import db
from pipeline.store.sink import Sink
from tests.dashboards.seed import (
    EMPATHIC_PHRASES,
    PHRASES,
    SEQUENCES,
    _finding,
    _turn,
    judge_rows,
)

END = datetime(2026, 11, 21, tzinfo=UTC)  # a midnight: the report counts whole days
WEEK = timedelta(days=7)
BOTS = ("helpdesk-north-01", "billing-assist-02", "payments-concierge-03", "returns-desk-04",
        "travel-rebooking-05", "insurance-claims-06", "telecom-support-07", "utilities-help-08",
        "bank-fraud-desk-09", "clinic-appointments-10", "tiny-pilot-bot-11", "care-line-12")
MODELS = ("acme-support-assistant-2026-09-eu-west-1", "acme-support-assistant-2026-11-eu-west-1",
          "globex-helpdesk-llm-large-instruct-v3-8k")
GAP_BOT, FLAT_BOT, TOXIC_BOT, TINY_BOT = BOTS[0], BOTS[1], BOTS[2], BOTS[10]
# (bot, category, group, replies this week, empathy shift)
GROUPS = ((GAP_BOT, "disability", "deaf", 50, -0.25), (GAP_BOT, "religion", "muslim", 5, 0.0),
          (GAP_BOT, "age", "65+", 1, 0.0), (FLAT_BOT, "age", "65+", 50, 0.0))


def _model(i: int) -> str:
    return MODELS[2] if i % 3 == 2 else MODELS[1]


def _plan() -> list[tuple[str, str, int, int, tuple[str, str, float] | None]]:
    """(bot, model, weeks back, how many, (category, group, shift) or None)."""
    plan: list[tuple[str, str, int, int, tuple[str, str, float] | None]] = []
    for i, bot in enumerate(BOTS):
        for back in (0, 1, 2):
            plan.append((bot, _model(i), back, 8 if bot == TINY_BOT else 30, None))
    plan += [(GAP_BOT, MODELS[0], back, 24, None) for back in (0, 1)]
    plan.append((BOTS[11], MODELS[0], 0, 5, None))
    for bot, category, group, n, shift in GROUPS:
        plan.append((bot, _model(BOTS.index(bot)), 0, n, (category, group, shift)))
    return plan


def _reply_findings(rng: random.Random, turn: dict[str, Any], shift: float,
                    toxic: bool) -> list[dict[str, Any]]:
    levels = {k: rng.choice((0, 1, 1, 2)) for k in ("er", "ip", "ex")}
    score = min(1.0, max(0.0, 0.45 + shift + rng.uniform(-0.12, 0.12)))
    out = [_finding(turn, "empathy.score", score, False, {
        **{k: {"level": v, "score": 0.3 * v} for k, v in levels.items()},
        "alignment": round(rng.uniform(0.5, 0.95), 3)})]
    if rng.random() < 0.3:  # long phrases: an empathy formula (flagged) or a script
        phrase = rng.choice(PHRASES)
        empathic = phrase in EMPATHIC_PHRASES
        out.append(_finding(
            turn, "repetition.stock_empathy" if empathic else "repetition.stock_phrase", 1.0,
            empathic, {"phrase": phrase + (" and thank you for your patience today" if empathic
                                           else " and your order is ready at the counter"),
                       "conversations": 3, "replies": 5, "share": round(rng.random(), 4)}))
    if rng.random() < 0.1:
        out.append(_finding(turn, "repetition.near_duplicate", 0.9, True, {"similarity": 0.9}))
    if rng.random() < 0.2:
        out.append(_finding(turn, "repetition.template_sequence", 0.2, False, {
            "sequence": rng.choice(SEQUENCES) + ">reassurance>closing", "share": 0.3,
            "replies": 25}))
    if toxic:
        out.append(_finding(turn, "toxicity.insult", 0.9, True, {"cue": "seeded"}))
    for label in ("bias.stereotype", "manipulation.guilt", "pii.leak"):
        if rng.random() < 0.05:
            out.append(_finding(turn, label, 0.9, True, {"cue": "seeded"}))
    return out


def rows(seed: int = 32) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    turns: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for p, (bot, model, back, n, group) in enumerate(_plan()):
        start = END - (back + 1) * WEEK + timedelta(hours=1)
        for c in range(n):
            conv = f"w{p:02d}-{c:03d}"
            t0 = start + timedelta(seconds=(WEEK.total_seconds() - 7200) * c / n)
            user = _turn(conv, 0, "user", t0, bot, "acme") | {"model": model}
            reply = _turn(conv, 1, "assistant", t0 + timedelta(minutes=1), bot, "acme") | {
                "model": model}
            turns += [user, reply]
            if group is not None:
                findings.append(_finding(user, "bias.user_group", 0.8, True, {
                    "category": group[0], "group": group[1], "cue": "self_i_am_adj"}))
            toxic = bot == TOXIC_BOT and back == 0 and c % 5 < 2
            findings += _reply_findings(rng, reply, group[2] if group else 0.0, toxic)
    return turns, findings + judge_rows(findings)


def seed_wide(engine: Engine) -> tuple[int, int]:
    """The rows written through the sink (so the rollups are kept as in production), a few
    hundred turns a batch."""
    turns, findings = rows()
    sink, per_turn = Sink(engine), {}
    for f in findings:
        per_turn.setdefault(f["turn_id"], []).append(f)
    for i in range(0, len(turns), 400):
        batch = turns[i:i + 400]
        sink.write(batch, [f for t in batch for f in per_turn.get(t["id"], ())])
    return len(turns), len(findings)


def wide_store(folder: Path) -> Engine:
    """A migrated SQLite store in ``folder`` holding these rows."""
    url = f"sqlite:///{folder / 'chatmon.db'}"
    db.upgrade(url)
    engine = db.make_engine(url)
    seed_wide(engine)
    return engine
