"""Phrase bookkeeping and window metrics of the repetition detector.

A phrase first lives in a candidate LRU with the one conversation that used it. When a second
conversation uses it, it is promoted to a stock phrase, and the replies of the first
conversation that used it are counted into its window share then: the first occurrences could
not be known as repeated when they streamed by, but the window numbers include them.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from detectors.repetition.sketch import HyperLogLog, pack, unpack

RECENT_CONVERSATIONS = 8


@dataclass(frozen=True, slots=True)
class PhraseStats:
    conversations: int
    replies: int


class Phrases:
    """Candidates (seen in one conversation) and stock phrases (seen in two or more)."""

    def __init__(self, max_candidates: int, max_phrases: int, block_size: int) -> None:
        self.max_candidates = max_candidates
        self.max_phrases = max_phrases
        self.block_size = block_size
        # key -> [conversation hash, last seq, replies]; insertion order is LRU order
        # (an OrderedDict: popping the oldest of a plain dict rescans its deleted slots)
        self.cand: OrderedDict[int, list[int]] = OrderedDict()
        # key -> {"b": {block: [replies, conversations]}, "rc": recent conversation hashes}
        self.stock: dict[int, dict[str, Any]] = {}
        self.oldest_block = 0
        self.first_seq = 0
        # The JSON form of each stock entry, rebuilt only for the keys changed since the last
        # ``to_json`` (the state is written back after every batch; most entries sit still).
        # Entries are replaced, never mutated, so earlier snapshots stay as they were.
        self._stock_json: dict[str, dict[str, Any]] = {}
        self._dirty: set[int] = set()

    def observe(self, key: int, conv: int, seq: int) -> None:
        """Count one reply (sequence number ``seq``, conversation ``conv``) using ``key``."""
        entry = self.stock.get(key)
        if entry is not None:
            self._dirty.add(key)
            new = conv not in entry["rc"]
            if new:
                entry["rc"] = (entry["rc"] + [conv])[-RECENT_CONVERSATIONS:]
            self._count(entry, seq, 1, int(new))
            return
        cand = self.cand.pop(key, None)
        if cand is not None and cand[1] >= self.first_seq and cand[0] != conv:
            entry = {"b": {}, "rc": [cand[0], conv]}
            self._count(entry, cand[1], cand[2], 1)  # the first conversation's uses, late
            self._count(entry, seq, 1, 1)
            self.stock[key] = entry
            self._dirty.add(key)
            self._cap_stock()
            return
        uses = cand[2] + 1 if cand is not None and cand[1] >= self.first_seq else 1
        self.cand[key] = [conv, seq, uses]
        while len(self.cand) > self.max_candidates:
            self.cand.popitem(last=False)

    def _count(self, entry: dict[str, Any], seq: int, replies: int, convs: int) -> None:
        block = seq // self.block_size
        if block < self.oldest_block:
            return
        cell = entry["b"].setdefault(block, [0, 0])
        cell[0] += replies
        cell[1] += convs

    def _cap_stock(self) -> None:
        """Over the cap, drop the least used tenth at once (amortised O(1) per promotion)."""
        if len(self.stock) <= self.max_phrases:
            return
        keep = max(1, self.max_phrases * 9 // 10)
        ranked = sorted(self.stock, key=lambda k: (self.stats(k).replies,
                                                   max(self.stock[k]["b"], default=0)))
        for key in ranked[: len(ranked) - keep]:
            del self.stock[key]
            self._dirty.add(key)

    def stats(self, key: int) -> PhraseStats:
        entry = self.stock.get(key)
        if entry is None:
            return PhraseStats(0, 0)
        cells = [c for b, c in entry["b"].items() if b >= self.oldest_block]
        return PhraseStats(sum(c[1] for c in cells), sum(c[0] for c in cells))

    def expire(self, oldest_block: int, first_seq: int) -> None:
        self.first_seq = first_seq
        if oldest_block == self.oldest_block:
            return
        self.oldest_block = oldest_block
        self._dirty.update(self.stock)
        for key in list(self.stock):
            cells = self.stock[key]["b"]
            for b in [b for b in cells if b < oldest_block]:
                del cells[b]
            if not cells:
                del self.stock[key]

    def to_json(self) -> dict[str, Any]:
        keys = np.fromiter(self.cand.keys(), dtype=np.int64, count=len(self.cand))
        vals = np.fromiter(chain.from_iterable(self.cand.values()), dtype=np.int64,
                           count=3 * len(self.cand)).reshape(-1, 3)
        return {
            "oldest_block": self.oldest_block,
            "first_seq": self.first_seq,
            "cand_key": pack(keys),
            "cand_conv": pack(vals[:, 0].astype(np.uint32)),
            "cand_seq": pack(vals[:, 1]),
            "cand_uses": pack(vals[:, 2].astype(np.uint32)),
            "stock": self._stock_snapshot(),
        }

    def _stock_snapshot(self) -> dict[str, dict[str, Any]]:
        for key in self._dirty:
            v = self.stock.get(key)
            if v is None:
                self._stock_json.pop(str(key), None)
            else:
                self._stock_json[str(key)] = {
                    "b": [[b, c[0], c[1]] for b, c in v["b"].items()], "rc": list(v["rc"])}
        self._dirty.clear()
        return dict(self._stock_json)

    @classmethod
    def from_json(cls, data: dict[str, Any], max_candidates: int, max_phrases: int,
                  block_size: int) -> Phrases:
        ph = cls(max_candidates, max_phrases, block_size)
        ph.oldest_block = int(data["oldest_block"])
        ph.first_seq = int(data["first_seq"])
        columns = [unpack(data[name], dt).tolist() for name, dt in
                   (("cand_key", "i8"), ("cand_conv", "u4"), ("cand_seq", "i8"),
                    ("cand_uses", "u4"))]
        rows = list(zip(*columns, strict=True))[-max_candidates:]
        ph.cand = OrderedDict((key, [conv, seq, uses]) for key, conv, seq, uses in rows)
        ph.stock = {int(k): {"b": {int(b): [r, c] for b, r, c in v["b"]}, "rc": list(v["rc"])}
                    for k, v in data["stock"].items()}
        ph._dirty.update(ph.stock)
        ph._cap_stock()
        return ph


@dataclass(frozen=True, slots=True)
class WindowStats:
    replies: int
    distinct_1: float
    distinct_2: float
    compression_ratio: float
    top_opener_share: float
    near_duplicate_share: float
    template: int  # the dominant sequence code (0: none with two or more functions)
    template_share: float

    @property
    def score(self) -> float:
        """1 - diversity; diversity is the mean of distinct-2, 1/compression ratio, and the
        shares of replies NOT opening with the top opener and NOT near-duplicated."""
        inverse_ratio = min(1.0, 1.0 / self.compression_ratio) if self.compression_ratio else 1.0
        diversity = (self.distinct_2 + inverse_ratio + (1.0 - self.top_opener_share)
                     + (1.0 - self.near_duplicate_share)) / 4
        return min(1.0, max(0.0, 1.0 - diversity))


class TopCounter:
    """Counts with O(1) increment, decrement and current maximum (buckets by count)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.buckets: dict[int, set[int]] = {}
        self.max = 0

    def add(self, key: int, delta: int) -> None:
        if not key:
            return
        old = self.counts.get(key, 0)
        new = max(0, old + delta)
        if old:
            self.buckets[old].discard(key)
            if not self.buckets[old]:
                del self.buckets[old]
        if new:
            self.counts[key] = new
            self.buckets.setdefault(new, set()).add(key)
        else:
            self.counts.pop(key, None)
        if new > self.max:
            self.max = new
        while self.max and self.max not in self.buckets:
            self.max -= 1

    def top(self) -> tuple[int, int]:
        """(key, count) of a most common key, ties broken by the smallest key; (0, 0) if empty."""
        if not self.max:
            return 0, 0
        return min(self.buckets[self.max]), self.max


class DistinctN:
    """Distinct-1/2 over the live blocks: the union of the closed blocks' HyperLogLog registers
    is cached and merged with the open block's on each call."""

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._closed: tuple[np.ndarray, int, int] | None = None

    def compute(self, blocks: dict[int, dict[str, Any]], hll: HyperLogLog, oldest: int,
                current: int) -> tuple[float, float]:
        """Distinct-1/2 over ``blocks`` ``oldest``..``current`` (``current`` is the open one)."""
        if self._key != (oldest, current) or self._closed is None:
            closed = [b for bid, b in blocks.items() if oldest <= bid < current]
            self._closed = (
                np.maximum.reduce([b["h"] for b in closed]) if closed else hll.empty(2),
                sum(int(b["u"]) for b in closed), sum(int(b["b"]) for b in closed))
            self._key = (oldest, current)
        regs, uni, bi = self._closed
        cur = blocks.get(current)
        if cur is not None:
            regs = np.maximum(regs, cur["h"])
            uni, bi = uni + int(cur["u"]), bi + int(cur["b"])
        m = hll.m
        d1 = min(1.0, hll.estimate(regs[:m]) / uni) if uni else 1.0
        d2 = min(1.0, hll.estimate(regs[m:]) / bi) if bi else 1.0
        return d1, d2
