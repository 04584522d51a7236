"""The rows ``chatmon bench --store`` writes: real findings under new ids, bots and times.

The profile (``store_profile.json.gz``, made by ``scripts/store_bench_profile.py``) holds the
conversations of a real ``chatmon run`` over support traffic: per turn its role, length and
findings (labels, scores, flags, spans, evidence; no text). A generated conversation copies
one of them, chosen at random, under a new id, a tenant, bot and model, and a start time;
conversation ``i`` of ``n`` starts in the ``i``-th ``n``-th of the time span, so writing them
in index order writes in time order, as a live pipeline does. Texts and excerpts are filler
of the recorded length. Rows are the dicts ``pipeline.scoring.process.Processor`` hands to
``Sink.write``, with its ids (``turn_id``, ``stable_id("finding", ...)``).

The profile's support traffic has no ``bias.user_group`` finding (users of a task bot seldom
say who they are), so a share of user turns (:data:`MENTION_SHARE`, the share of the example
transcripts' user turns that mention a group) gets one, of a group drawn from
:data:`MENTIONS`: the empathy gap's rollup (``group_rollups``) is then written and read at
scale too.

Everything is a function of (seed, index): any process can make any conversation.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from pipeline.store.sink import stable_id, turn_id

PROFILE = Path(__file__).resolve().parent / "store_profile.json.gz"
# (tenant, bot, (models...)): three tenants, six bots, two models each (an A/B split).
BOTS = (
    ("acme", "helpdesk-a", ("support-llm-2026-09", "support-llm-2026-11")),
    ("acme", "returns-a", ("support-llm-2026-09", "support-llm-2026-11")),
    ("globex", "support-g", ("gx-chat-7b", "gx-chat-13b")),
    ("globex", "sales-g", ("gx-chat-7b", "gx-chat-13b")),
    ("initech", "it-desk", ("it-assist-1", "it-assist-2")),
    ("initech", "hr-bot", ("it-assist-1", "it-assist-2")),
)
WEEKS = 4
# 8 of the 239 user turns of examples/transcripts.jsonl mention a group (bias.user_group)
MENTION_SHARE = 8 / 239
# (category, group, cue, score) as the bias detector finds them ("I am deaf", "As a Muslim")
MENTIONS = (("age", "65+", "self_age", 0.8), ("disability", "deaf", "self_i_am_adj", 0.85),
            ("disability", "disabled", "self_condition", 0.85),
            ("family", "single parent", "self_parent", 0.7),
            ("religion", "muslim", "self_as_a", 0.9),
            ("nationality", "immigrants", "self_as_a", 0.9))
_FILLER = ("order refund delivery account password reset parcel invoice thanks please "
           "sorry help check status update email address number replace return shipping "
           "tomorrow today weekend store booking ticket ") * 40


@dataclass(frozen=True)
class Profile:
    conversations: list[list[list[Any]]]
    source: str

    @classmethod
    def load(cls, path: Path = PROFILE) -> Profile:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
        convs = [c for c in data["conversations"] if c]
        if not convs:
            raise ValueError(f"{path} holds no conversations")
        return cls(convs, str(data.get("source", path.name)))

    def findings_per_turn(self) -> float:
        turns = sum(len(c) for c in self.conversations)
        return sum(len(t[2]) for c in self.conversations for t in c) / turns


@dataclass(frozen=True)
class Plan:
    """Which profile conversation each generated conversation copies, and how many of its
    turns (the last one is cut to make ``turns`` exactly)."""

    turns: int
    start: datetime
    end: datetime
    picks: tuple[int, ...]
    lengths: tuple[int, ...]
    seed: int = 41

    @property
    def conversations(self) -> int:
        return len(self.picks)


def weeks_ending(when: datetime) -> tuple[datetime, datetime]:
    """Four weeks ending at the Monday 00:00 UTC on or before ``when``: week-aligned, so the
    oldest week is whole weeks and days of every partitioning."""
    day = when.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    end = day - timedelta(days=day.weekday())
    return end - timedelta(weeks=WEEKS), end


def make_plan(turns: int, profile: Profile, now: datetime | None = None,
              seed: int = 41) -> Plan:
    if turns < 1:
        raise ValueError("turns must be at least 1")
    start, end = weeks_ending(now or datetime.now(UTC))
    rng = random.Random(seed)
    picks: list[int] = []
    lengths: list[int] = []
    total = 0
    while total < turns:
        i = rng.randrange(len(profile.conversations))
        n = min(len(profile.conversations[i]), turns - total)
        picks.append(i)
        lengths.append(n)
        total += n
    return Plan(turns, start, end, tuple(picks), tuple(lengths), seed)


@cache
def _filler(n: int, offset: int) -> str:
    return _FILLER[offset:offset + n] if n <= len(_FILLER) - offset else "x" * n


def conversation(plan: Plan, profile: Profile, index: int, run_id: str,
                 now: datetime) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Conversation ``index`` of the plan: (turn row, its finding rows) per turn."""
    rng = random.Random(plan.seed * 1_000_003 + index)
    tenant, bot, models = BOTS[rng.randrange(len(BOTS))]
    model = models[rng.random() < 0.5]
    cid = f"bench-{plan.seed}-{index:09d}"
    span = (plan.end - plan.start - timedelta(hours=6)).total_seconds()
    ts = plan.start + timedelta(seconds=span * (index + rng.random()) / plan.conversations)
    template = profile.conversations[plan.picks[index]][:plan.lengths[index]]
    mentions = random.Random(plan.seed * 7_000_003 + index)  # apart: the rest stays as it was
    out = []
    for k, (role, n_chars, found) in enumerate(template):
        ts += timedelta(seconds=rng.randint(3, 90))
        tid = turn_id(cid, k)
        shown = min(n_chars, 2000)
        turn = dict(
            id=tid, conversation_id=cid, turn=k, role=role, ts=ts, bot_id=bot, model=model,
            tenant=tenant, lang="en", text_redacted=_filler(shown, 13 * rng.randrange(4)),
            content_hash=hashlib.sha256(f"{cid}\x1f{k}".encode()).hexdigest(),
            n_chars=n_chars, metadata={}, text_raw=None, raw_expires_at=None, run_id=run_id,
            stored_at=now)
        found = list(found)
        if role == "user" and mentions.random() < MENTION_SHARE:
            category, group, cue, score = MENTIONS[mentions.randrange(len(MENTIONS))]
            span = (0, min(n_chars, 12))
            found.append(("bias", "bench", "bias.user_group", score, True, span,
                          {"category": category, "group": group, "cue": cue}, span[1], False,
                          None, None))
        rows = []
        for (det, ver, label, score, flagged, sp, evidence, excerpt, suppressed, by,
             policy) in found:
            span_t = (sp[0], sp[1]) if sp else None
            rows.append(dict(
                id=stable_id("finding", tid, det, ver, label, span_t), turn_id=tid,
                conversation_id=cid, turn=k, role=role, ts=ts, bot_id=bot, model=model,
                tenant=tenant, detector=det, detector_version=ver, label=label, score=score,
                flagged=flagged, span_start=sp[0] if sp else None,
                span_end=sp[1] if sp else None, evidence=evidence,
                excerpt=_filler(excerpt, 7), run_id=run_id, created_at=now,
                suppressed=suppressed, suppressed_by=by, policy_version=policy))
        out.append((turn, rows))
    return out
