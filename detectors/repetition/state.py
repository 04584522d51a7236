"""Bounded per-bot state of the repetition detector, and its JSON form.

One ``BotState`` per (tenant, bot). Memory is bounded by the options, whatever the stream:

- the window: the last ``max_replies`` replies younger than ``window_s`` seconds, as ring
  buffers of small numbers per reply (time, turn, conversation, opener, sequence, sizes and an
  8-bit MinHash signature); no reply text is kept. A reply removed on request
  (``detectors/repetition/erase.py``) stays as a tombstone (turn -1, zeros) until it leaves;
- phrase candidates seen in one conversation so far: an LRU of at most ``max_candidates``
  (key, conversation, last reply, uses) rows;
- confirmed stock phrases (seen in two or more conversations): at most ``max_phrases``, each
  with reply and conversation counts per block of ``block_size`` replies, so their window share
  is exact up to one block;
- per block, HyperLogLog registers of the token unigrams and bigrams (distinct-n);
- the last 32 KiB of the window's hashed-token stream (deflate's window) for the compression
  ratio.

``to_json``/``from_json`` give a JSON-serialisable dict (numbers as base64 numpy buffers) that
a faust Table can hold; a round trip is lossless.

Conversations are known by :func:`conversation_hash`, the first 32 bits of the SHA-256 of the
id: the pipeline's deletion records keep that digest (never the id), so a worker can find a
deleted conversation's entries from the record alone.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from detectors.repetition.sketch import (
    HyperLogLog,
    MinHasher,
    marginal_compressed_size,
    pack,
    unigram_hashes,
    unpack,
)
from detectors.repetition.text import Analysis, encode_sequence
from detectors.repetition.window import DistinctN, Phrases, TopCounter, WindowStats

# 2: conversations hashed by SHA-256 (was CRC-32), so a deletion record can name them.
STATE_VERSION = 2
CONTEXT_BYTES = 32 * 1024
_ROWS: dict[str, str] = {"ts": "f8", "turn": "i4", "conv": "u4", "opener": "i8", "tmpl": "u4",
                         "nd": "u1", "raw": "u4", "comp": "u4"}


def conversation_hash(conversation_id: str) -> int:
    """The state's 32-bit name for a conversation (see the module docstring)."""
    return digest_hash(hashlib.sha256(conversation_id.encode()).hexdigest())


def digest_hash(sha256_hex: str) -> int:
    """:func:`conversation_hash` from the conversation id's SHA-256 hex digest."""
    return int(sha256_hex[:8], 16)


@dataclass(frozen=True, slots=True)
class Config:
    max_replies: int = 2000
    window_s: float = 7 * 86400.0
    num_perm: int = 32
    bands: int = 16
    hll_precision: int = 10
    max_candidates: int = 8000
    max_phrases: int = 1000
    near_duplicate_jaccard: float = 0.7

    @property
    def block_size(self) -> int:
        return max(1, -(-self.max_replies // 8))


@dataclass(frozen=True, slots=True)
class Match:
    similarity: float
    conversation_id: str | None
    turn: int


class BotState:
    """The working form of one bot's state (numpy ring buffers, dicts)."""

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
        self.cap = cfg.max_replies + 1
        self.seq = 0
        self.first = 0
        self.rows = {name: np.zeros(self.cap, dtype=dt) for name, dt in _ROWS.items()}
        self.sig = np.zeros((self.cap, cfg.num_perm), dtype=np.uint8)
        self.conv_ids: list[str | None] = [None] * self.cap
        self.ctx = b""
        self.hll = HyperLogLog(cfg.hll_precision)
        self.blocks: dict[int, dict[str, Any]] = {}
        self.phrases = Phrases(cfg.max_candidates, cfg.max_phrases, cfg.block_size)
        # Derived from the rows (rebuilt by from_json, never serialised):
        self.alive = np.zeros(self.cap, dtype=bool)
        self.sums = {"raw": 0, "comp": 0, "nd": 0}
        self.replies = 0  # live rows that are not tombstones
        self.openers = TopCounter()
        self.templates = TopCounter()
        self.distinct = DistinctN()
        self.seen: set[tuple[int, int]] = set()

    # -- the window ------------------------------------------------------------------------
    def live(self) -> np.ndarray:
        return np.arange(self.first, self.seq) % self.cap

    def is_duplicate(self, conv: int, turn: int) -> bool:
        """A redelivered turn (at-least-once delivery) must not be counted twice."""
        return (conv, turn) in self.seen

    def nearest(self, sig: np.ndarray, conv: int) -> Match | None:
        """The most similar live reply of another conversation among the LSH candidates."""
        hit = MinHasher.band_candidates(sig, self.sig, self.cfg.bands)
        idx = np.flatnonzero(hit & self.alive & (self.rows["conv"] != conv))
        if idx.size == 0:
            return None
        sims = MinHasher.similarity(sig, self.sig[idx])
        best = int(np.argmax(sims))
        row = int(idx[best])
        return Match(float(sims[best]), self.conv_ids[row], int(self.rows["turn"][row]))

    def mark_near_duplicate(self, conversation_id: str | None, turn: int) -> None:
        """Retroactively count the earlier reply of a near-duplicate pair in the window share."""
        idx = self.live()
        hit = idx[self.rows["turn"][idx] == turn]
        for row in hit:
            if self.conv_ids[int(row)] == conversation_id and not self.rows["nd"][row]:
                self.rows["nd"][row] = 1
                self.sums["nd"] += 1

    def insert(self, a: Analysis, ts: float, conv: int, conversation_id: str, turn: int,
               sig: np.ndarray, near_dup: bool) -> None:
        row = self.seq % self.cap
        data = (a.tokens & np.uint64(0xFFFFFF)).astype("<u4").view(np.uint8).reshape(-1, 4)
        stream = data[:, :3].tobytes()
        comp = marginal_compressed_size(stream, self.ctx)
        self.ctx = (self.ctx + stream)[-CONTEXT_BYTES:]
        values = {"ts": ts, "turn": turn, "conv": conv, "opener": a.opener,
                  "tmpl": _template_code(a), "nd": int(near_dup), "raw": len(stream), "comp": comp}
        for name, value in values.items():
            self.rows[name][row] = value
        self.sig[row] = sig
        self.conv_ids[row] = conversation_id
        self._count_row(row, 1)
        self._add_to_block(a)
        self.seq += 1
        self._expire(ts)

    def _add_to_block(self, a: Analysis) -> None:
        block = self.blocks.get(self.seq // self.cfg.block_size)
        if block is None:
            block = {"n": 0, "u": 0, "b": 0, "h": self.hll.empty(2)}
            self.blocks[self.seq // self.cfg.block_size] = block
        block["n"] += 1
        block["u"] += int(a.tokens.size)
        block["b"] += max(0, int(a.tokens.size) - 1)
        # registers: unigram sketch, then bigram sketch (the bigrams are the MinHash shingles)
        self.hll.add(block["h"], unigram_hashes(a.tokens),
                     a.shingles if a.tokens.size > 1 else a.shingles[:0])

    def _expire(self, now: float) -> None:
        self.expire_to(now - self.cfg.window_s)

    def expire_to(self, horizon: float) -> None:
        """Drop the oldest rows while the window is over its size or they are older than
        ``horizon`` (a timestamp)."""
        moved = False
        while self.first < self.seq and (
            self.seq - self.first > self.cfg.max_replies
            or self.rows["ts"][self.first % self.cap] < horizon
        ):
            row = self.first % self.cap
            self._count_row(row, -1)
            self.conv_ids[row] = None
            self.first += 1
            moved = True
        if moved:
            oldest = self.first // self.cfg.block_size
            for bid in [b for b in self.blocks if b < oldest]:
                del self.blocks[bid]
            self.phrases.expire(oldest, self.first)

    def block_replies(self) -> int:
        """Replies in the live blocks: the denominator of phrase shares."""
        oldest = self.first // self.cfg.block_size
        return sum(int(v["n"]) for b, v in self.blocks.items() if b >= oldest)

    def stats(self) -> WindowStats:
        n = self.replies
        oldest = self.first // self.cfg.block_size
        current = max(oldest, (self.seq - 1) // self.cfg.block_size)
        d1, d2 = self.distinct.compute(self.blocks, self.hll, oldest, current)
        _, opener_count = self.openers.top()
        template, template_count = self.templates.top()
        return WindowStats(
            replies=n,
            distinct_1=d1,
            distinct_2=d2,
            compression_ratio=self.sums["raw"] / self.sums["comp"] if self.sums["comp"] else 1.0,
            top_opener_share=opener_count / n if n and opener_count >= 2 else 0.0,
            near_duplicate_share=self.sums["nd"] / n if n else 0.0,
            template=template,
            template_share=template_count / n if n else 0.0,
        )

    # -- JSON --------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        idx = self.live()
        return {
            "v": STATE_VERSION,
            "layout": _layout(self.cfg),
            "seq": self.seq,
            "first": self.first,
            "rows": {name: pack(arr[idx]) for name, arr in self.rows.items()},
            "sig": pack(self.sig[idx].reshape(-1)),
            "conv_ids": [self.conv_ids[int(i)] for i in idx],
            "ctx": base64.b64encode(self.ctx).decode("ascii"),
            "blocks": {str(b): {"n": v["n"], "u": v["u"], "b": v["b"], "h": pack(v["h"])}
                       for b, v in self.blocks.items()},
            "phrases": self.phrases.to_json(),
        }

    @classmethod
    def from_json(cls, cfg: Config, data: dict[str, Any]) -> BotState:
        st = cls(cfg)
        if not readable(cfg, data):
            return st  # another version or sketch layout starts afresh rather than misreading
        st.seq, st.first = int(data["seq"]), int(data["first"])
        st.first = max(st.first, st.seq - cfg.max_replies)  # options may have shrunk
        n = st.seq - int(data["first"])
        idx = st.live()
        keep = slice(n - idx.size, n)
        for name, dt in _ROWS.items():
            st.rows[name][idx] = unpack(data["rows"][name], dt)[keep]
        st.sig[idx] = unpack(data["sig"], "u1").reshape(n, -1)[keep, : cfg.num_perm]
        for i, cid in zip(idx, data["conv_ids"][keep], strict=True):
            st.conv_ids[int(i)] = cid
        st.ctx = base64.b64decode(data["ctx"])
        for b, v in data["blocks"].items():
            st.blocks[int(b)] = {"n": v["n"], "u": v["u"], "b": v["b"],
                                 "h": unpack(v["h"], "u1").copy()}
        st.phrases = Phrases.from_json(data["phrases"], cfg.max_candidates, cfg.max_phrases,
                                       cfg.block_size)
        for i in idx:
            st._count_row(int(i), 1)
        return st

    def _count_row(self, row: int, sign: int) -> None:
        """Add (sign 1) or remove (sign -1) a row in the derived structures (a tombstone is
        in none of them)."""
        if self.rows["turn"][row] < 0:
            self.alive[row] = False
            return
        self.replies += sign
        key = (int(self.rows["conv"][row]), int(self.rows["turn"][row]))
        if sign > 0:
            self.seen.add(key)
        else:
            self.seen.discard(key)
        self.alive[row] = sign > 0
        for name in self.sums:
            self.sums[name] += sign * int(self.rows[name][row])
        self.openers.add(int(self.rows["opener"][row]), sign)
        self.templates.add(int(self.rows["tmpl"][row]), sign)


def readable(cfg: Config, data: dict[str, Any]) -> bool:
    """Whether ``data`` was written by this state version under these sketch options."""
    return data.get("v") == STATE_VERSION and data.get("layout") == _layout(cfg)


def _layout(cfg: Config) -> list[int]:
    """The options that shape the sketches; state built under others cannot be reused."""
    return [cfg.num_perm, cfg.hll_precision, cfg.block_size]


def _template_code(a: Analysis) -> int:
    return encode_sequence(a.sequence) if len(a.sequence) >= 2 else 0
