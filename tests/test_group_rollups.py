"""The empathy gap's rollup (``group_rollups``, issue 41): a reply answering a user turn that
mentions a group counts once per group, on the day of the reply, whichever of the two turns
is written first, however the turns are batched, however often they are replayed, and however
many findings name the group; deleting conversations on request, a turn per batch, takes
exactly their pairs out. Compared with the pairs counted from the rows in Python, on SQLite and
PostgreSQL."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine, select

from pipeline.lifecycle.purge import Purger, Request
from pipeline.store import db
from pipeline.store.deletions import CONVERSATION
from pipeline.store.models import GroupRollupRow
from pipeline.store.rollups import day_of
from pipeline.store.sink import Sink, stable_id
from tests.dashboards.seed import rows

Key = tuple[datetime, str, str, str, str, str]


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    db.upgrade(store_url)
    engine = db.make_engine(store_url)
    yield engine
    engine.dispose()


def expected(findings: list[dict[str, Any]]) -> dict[Key, tuple[int, float]]:
    """The pairs counted from the rows: (reply day, tenant, bot, model, category, group) ->
    (replies, sum of their empathy scores)."""
    groups: dict[tuple[str, int], set[tuple[str, str]]] = defaultdict(set)
    for f in findings:
        if f["label"] == "bias.user_group":
            groups[(f["conversation_id"], f["turn"])].add(
                (f["evidence"]["category"], f["evidence"]["group"]))
    out: dict[Key, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in findings:
        if e["label"] != "empathy.score":
            continue
        for category, group in groups.get((e["conversation_id"], e["turn"] - 1), ()):
            cell = out[(day_of(e["ts"]), e["tenant"], e["bot_id"], e["model"], category, group)]
            cell[0] += 1
            cell[1] += e["score"]
    return {k: (int(v[0]), round(v[1], 6)) for k, v in out.items()}


def stored(engine: Engine) -> dict[Key, tuple[int, float]]:
    g = GroupRollupRow
    with engine.connect() as conn:
        got = conn.execute(select(g.bucket, g.tenant, g.bot_id, g.model, g.category,
                                  g.user_group, g.n, g.total)).all()
    return {(day_of(b), t, bot, m, c, grp): (n, round(total, 6))
            for b, t, bot, m, c, grp, n, total in got}


def by_turn(findings: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in findings:
        out[f["turn_id"]].append(f)
    return out


def test_one_batch_gives_the_pairs_of_the_rows(engine: Engine) -> None:
    turns, findings = rows()
    Sink(engine).write(turns, findings)
    want = expected(findings)
    assert len(want) >= 10 and sum(n for n, _ in want.values()) >= 20  # the seed reaches it
    assert stored(engine) == want


def test_turn_by_turn_in_reverse_and_replayed_gives_the_same(engine: Engine) -> None:
    turns, findings = rows()
    per_turn = by_turn(findings)
    sink = Sink(engine)
    # every reply is stored before the user turn it answers: the mention's write makes the pair
    for t in sorted(turns, key=lambda t: (t["conversation_id"], -t["turn"])):
        sink.write([t], per_turn[t["id"]])
    assert stored(engine) == expected(findings)
    for i in range(0, len(turns), 7):  # a replay in other batches adds nothing
        batch = turns[i:i + 7]
        sink.write(batch, [f for t in batch for f in per_turn[t["id"]]])
    assert stored(engine) == expected(findings)


def test_a_group_named_again_adds_nothing_and_another_group_adds_the_reply(
        engine: Engine) -> None:
    turns, findings = rows()
    sink = Sink(engine)
    sink.write(turns, findings)
    mention = next(f for f in findings if f["label"] == "bias.user_group"
                   and any(e["label"] == "empathy.score" and e["turn"] == f["turn"] + 1
                           and e["conversation_id"] == f["conversation_id"] for e in findings))
    again = {**mention, "id": stable_id("again", mention["id"]), "span_start": 3, "span_end": 9}
    other = {**mention, "id": stable_id("other", mention["id"]),
             "evidence": {"category": "age", "group": "older adults", "cue": "self_i_am_adj"}}
    sink.write((), [again])  # a later write (a second stage) naming the same group
    assert stored(engine) == expected(findings)
    sink.write((), [other])
    want = expected([*findings, other])
    assert stored(engine) == want and want != expected(findings)


def test_deleting_conversations_a_turn_per_batch_takes_exactly_their_pairs_out(
        engine: Engine) -> None:
    turns, findings = rows()
    Sink(engine).write(turns, findings)
    mentioned = sorted({f["conversation_id"] for f in findings
                        if f["label"] == "bias.user_group"})
    gone = set(mentioned[::2])
    Purger(engine, "chatmon purge --conversation", batch_size=1).run(
        Request(CONVERSATION, tuple(sorted(gone))))
    left = [f for f in findings if f["conversation_id"] not in gone]
    assert stored(engine) == expected(left) != expected(findings)
