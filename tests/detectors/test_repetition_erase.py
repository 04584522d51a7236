"""Removing a conversation (deletion on request) and old replies (retention) from the
repetition state: nothing left names or matches it, the rest of the window works on, and the
removal survives the JSON round trip a faust Table makes."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from detectors.base import Context, DictStateStore, ScoringInput, Turn
from detectors.repetition.detector import RepetitionDetector, state_key
from detectors.repetition.sketch import unpack
from detectors.repetition.state import BotState, Config, conversation_hash
from detectors.repetition.text import analyse

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SORRY = "I'm sorry to hear that."
# (conversation, reply): c2's reply is a near-copy of c1's; every one opens with SORRY.
REPLIES = [
    ("c1", f"{SORRY} Your blue kettle from the spring catalogue ships from Leeds tomorrow."),
    ("c2", f"{SORRY} Your blue kettle from the spring catalogue ships from Leeds tomorrow!"),
    ("c3", f"{SORRY} The warranty covers the toaster's heating element for two years."),
    ("c4", f"{SORRY} A voucher for the delayed sofa delivery is on its way by e-mail."),
]


def item(conv: str, text: str, store: DictStateStore, seconds: float = 0.0,
         turn: int = 1) -> ScoringInput:
    t = Turn(conv, turn, "assistant", text, T0 + timedelta(seconds=seconds), bot_id="shopbot")
    return ScoringInput(t, Context(state=store))


KEY = state_key(Turn("x", 0, "assistant", "", T0, bot_id="shopbot"))


def filled(det: RepetitionDetector) -> DictStateStore:
    store = DictStateStore()
    for i, (conv, text) in enumerate(REPLIES):
        det.score([item(conv, text, store, seconds=i)])
    return store


def stream_bytes(text: str) -> bytes:
    """The hashed-token bytes a reply adds to the compression context."""
    tokens = analyse(text).tokens
    return (tokens & np.uint64(0xFFFFFF)).astype("<u4").view(np.uint8).reshape(-1, 4)[:, :3] \
        .tobytes()


def hashes_in(value: dict[str, object]) -> set[int]:
    """Every conversation hash the stored state holds: window rows, candidates, stock lists."""
    rows = set(unpack(value["rows"]["conv"], "u4").tolist())  # type: ignore[index]
    phrases = value["phrases"]
    cand = set(unpack(phrases["cand_conv"], "u4").tolist())  # type: ignore[index]
    stock = {c for v in phrases["stock"].values() for c in v["rc"]}  # type: ignore[index]
    return rows | cand | stock


def test_forgotten_conversation_leaves_no_trace_and_matches_nothing() -> None:
    det = RepetitionDetector(min_window=2)
    store = filled(det)
    before = store.get(KEY)
    gone = conversation_hash("c1")
    assert gone in hashes_in(before) and "c1" in json.dumps(before)

    value, n = det.forget(before, {gone})
    assert n >= 2  # its window row, and at least its place in a stock phrase's list
    assert gone not in hashes_in(value)
    assert '"c1"' not in json.dumps(value)
    # c1's hashed tokens leave the compression context (c2's, the same words, stay).
    ctx_before, ctx_after = (base64.b64decode(v["ctx"]) for v in (before, value))
    assert ctx_before.count(stream_bytes(REPLIES[0][1])) == 2
    assert ctx_after.count(stream_bytes(REPLIES[0][1])) == 1
    assert stream_bytes(REPLIES[2][1]) in ctx_after
    store.set(KEY, value)

    # A near-copy of c1's reply now finds c2 (its near-copy) but never c1; the window counts
    # the three replies left, then this one.
    (found,) = det.score([item("c9", REPLIES[0][1], store, seconds=10)])
    matched = [f.evidence["conversation_id"] for f in found
               if f.label == "repetition.near_duplicate"]
    assert matched == ["c2"]
    window = next(f for f in found if f.label == "repetition.window")
    assert window.evidence["replies"] == 4
    stock = next(f for f in found if f.label == "repetition.stock_empathy")
    assert stock.evidence["phrase"] == "i'm sorry to hear that"


def test_forgetting_survives_a_restart_from_the_changelog() -> None:
    det = RepetitionDetector(min_window=2)
    store = filled(det)
    value, _ = det.forget(store.get(KEY), {conversation_hash("c1"), conversation_hash("c2")})
    restored = DictStateStore()
    restored.set(KEY, json.loads(json.dumps(value)))
    fresh = RepetitionDetector(min_window=2)  # another worker: nothing cached
    (found,) = fresh.score([item("c9", REPLIES[0][1], restored, seconds=10)])
    assert not [f for f in found if f.label == "repetition.near_duplicate"]
    assert next(f for f in found if f.label == "repetition.window").evidence["replies"] == 3
    st = BotState.from_json(Config(), restored.get(KEY))
    assert st.replies == 3 and st.seq - st.first == 5  # two tombstones hold their slots


def test_tombstones_leave_with_the_window() -> None:
    det = RepetitionDetector(max_replies=4, min_window=2)
    store = filled(det)
    value, _ = det.forget(store.get(KEY), {conversation_hash("c3")})
    store.set(KEY, value)
    for i in range(6):
        det.score([item(f"n{i}", f"Reply {i} about the {['lamp', 'sofa', 'rug'][i % 3]}.",
                        store, seconds=10 + i)])
    st = BotState.from_json(Config(max_replies=4), store.get(KEY))
    assert st.replies == 4 and st.seq - st.first == 4
    assert (st.rows["turn"][st.live()] >= 0).all()


def test_forgetting_an_absent_conversation_changes_nothing() -> None:
    det = RepetitionDetector()
    store = filled(det)
    value = store.get(KEY)
    assert det.forget(value, {conversation_hash("nobody")}) == (value, 0)
    assert det.forget(None, {conversation_hash("c1")}) == (None, 0)


def test_a_state_of_another_version_is_dropped() -> None:
    det = RepetitionDetector()
    value = {**filled(det).get(KEY), "v": 1}
    assert det.forget(value, {conversation_hash("c1")}) == (None, 1)


@pytest.mark.parametrize("shuffled", [False, True])
def test_expire_before_removes_every_older_reply(shuffled: bool) -> None:
    """Retention shorter than the window: replies older than the cut go, also one that arrived
    after a newer one (out of time order)."""
    det = RepetitionDetector(min_window=2)
    store = DictStateStore()
    ages = [5, 4, 1, 3, 0] if shuffled else [5, 4, 3, 1, 0]  # days before T0
    things = ("lamp", "sofa", "rug", "mug", "cup")
    for i, days in enumerate(ages):
        text = f"{SORRY} Order {i} of the {things[i]} left today."
        det.score([item(f"c{i}", text, store, seconds=-days * 86400)])
    value, n = det.forget(store.get(KEY), (), before=T0 - timedelta(days=2))
    assert n == 3
    st = BotState.from_json(Config(), value)
    live = st.live()
    kept_ts = sorted(st.rows["ts"][live][st.rows["turn"][live] >= 0].tolist())
    assert kept_ts == [(T0 - timedelta(days=1)).timestamp(), T0.timestamp()]
    assert {c for c in st.conv_ids if c is not None} == {f"c{ages.index(1)}", "c4"}
    assert all(seq >= st.phrases.first_seq for _, seq, _ in st.phrases.cand.values())
