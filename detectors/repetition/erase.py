"""Removing conversations and old replies from a bot's repetition state (deletion on request,
retention).

What ties the state to a conversation, and what removal does with it:

- window rows (conversation hash and id, turn, MinHash signature, opener, sequence, sizes):
  the row becomes a tombstone (turn -1, zeros, no id) that holds its ring slot until the
  window moves past it; it no longer counts, matches or names anything;
- the last 32 KiB of hashed tokens (the compression context): the row's bytes are cut out,
  and so are bytes older than the oldest live row (their rows are gone, whoever wrote them);
- phrase candidates (a phrase hash seen in one conversation so far): the conversation's go,
  and so do candidates older than the window (dead already: ``Phrases.observe`` ignores them);
- stock phrases (seen in two or more conversations): the conversation's hash leaves the list
  of recent conversations.

What stays: per-block counts (replies, tokens), HyperLogLog registers and the stock phrases'
per-block reply and conversation counts. They are numbers summed or maxed over many replies,
hold no id or hash of a conversation, and leave with their block (``window_days``).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from detectors.repetition.state import _ROWS, BotState

TOMBSTONE_TURN = -1


def forget(st: BotState, conversations: Collection[int]) -> int:
    """Remove the conversations (their ``conversation_hash``) from ``st``; returns how many
    window rows and phrase entries went."""
    if not conversations:
        return 0
    wanted = np.fromiter(conversations, dtype=np.uint32, count=len(conversations))
    seqs, idx = _live(st)
    hit = np.isin(st.rows["conv"][idx], wanted) & (st.rows["turn"][idx] >= 0)
    rows = idx[hit]
    if rows.size:
        st.ctx = _ctx_without(st, {int(r) for r in rows})
        for row in rows:
            _tombstone(st, int(row))
    return int(rows.size) + _forget_phrases(st, {int(c) for c in conversations})


def expire_before(st: BotState, horizon: float) -> int:
    """Remove every reply older than ``horizon`` (a timestamp), also those the window keeps
    behind a newer one (replies arrive out of time order across partitions); returns how many
    went."""
    before = st.replies
    st.expire_to(horizon)
    _, idx = _live(st)
    old = idx[(st.rows["ts"][idx] < horizon) & (st.rows["turn"][idx] >= 0)]
    st.ctx = _ctx_without(st, {int(r) for r in old})
    for row in old:
        _tombstone(st, int(row))
    _forget_phrases(st, set())
    return before - st.replies


def _live(st: BotState) -> tuple[np.ndarray, np.ndarray]:
    seqs = np.arange(st.first, st.seq)
    return seqs, seqs % st.cap


def _tombstone(st: BotState, row: int) -> None:
    st._count_row(row, -1)
    for name in _ROWS:
        if name != "ts":  # the time keeps the window's order for expiry
            st.rows[name][row] = 0
    st.rows["turn"][row] = TOMBSTONE_TURN
    st.sig[row] = 0
    st.conv_ids[row] = None
    st.alive[row] = False


def _ctx_without(st: BotState, drop: set[int]) -> bytes:
    """The compression context without the bytes of rows ``drop``, nor any older than the
    oldest live row. The context is the tail of the live rows' hashed-token streams in order,
    ``rows["raw"]`` bytes each (tombstones: 0)."""
    _, idx = _live(st)
    end = len(st.ctx)
    kept: list[bytes] = []
    for row in idx[::-1]:
        if end <= 0:
            break
        start = max(0, end - int(st.rows["raw"][row]))
        if int(row) not in drop:
            kept.append(st.ctx[start:end])
        end = start
    return b"".join(reversed(kept))


def _forget_phrases(st: BotState, conversations: set[int]) -> int:
    ph = st.phrases
    n = 0
    for key in [k for k, (conv, seq, _) in ph.cand.items()
                if conv in conversations or seq < ph.first_seq]:
        n += ph.cand.pop(key)[0] in conversations
    if conversations:
        for key, entry in ph.stock.items():
            kept = [c for c in entry["rc"] if c not in conversations]
            if len(kept) < len(entry["rc"]):
                entry["rc"] = kept
                ph._dirty.add(key)
                n += 1
    return n
