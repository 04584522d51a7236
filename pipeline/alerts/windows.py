"""Sliding-window counters and evidence for the embedded alert engine.

Observations go into time buckets per series and label set; a query sums the buckets inside a
window, grouped by some labels (like PromQL's ``sum by (...) (increase(x[w]))``). Memory is
bounded: buckets older than the horizon are dropped, label values are capped upstream, and
evidence keeps the last few conversation/turn pairs per key.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

Labels = tuple[tuple[str, str], ...]
Group = tuple[str, ...]
EVIDENCE_PER_KEY = 20


def labels_of(**values: str) -> Labels:
    return tuple(sorted(values.items()))


class Buckets:
    """Sum and count per (series, labels) in buckets of ``bucket_s`` seconds, kept for
    ``horizon_s`` seconds."""

    def __init__(self, bucket_s: float, horizon_s: float) -> None:
        self.bucket_s = bucket_s
        self.horizon_s = horizon_s
        self.data: dict[tuple[str, Labels], deque[list[float]]] = {}

    def add(self, series: str, labels: Labels, now: float, value: float = 1.0,
            count: float = 1.0) -> None:
        start = math.floor(now / self.bucket_s) * self.bucket_s
        buckets = self.data.setdefault((series, labels), deque())
        if buckets and buckets[-1][0] == start:
            buckets[-1][1] += value
            buckets[-1][2] += count
        else:
            buckets.append([start, value, count])
        self._prune(buckets, now)

    def _prune(self, buckets: deque[list[float]], now: float) -> None:
        while buckets and buckets[0][0] + self.bucket_s < now - self.horizon_s:
            buckets.popleft()

    def prune(self, now: float) -> None:
        for key in list(self.data):
            self._prune(self.data[key], now)
            if not self.data[key]:
                del self.data[key]

    def sum_by(self, series: str, by: tuple[str, ...], window_s: float, now: float,
               match: Mapping[str, str] | None = None) -> dict[Group, tuple[float, float]]:
        """(sum, count) per group over buckets that end inside ``(now - window_s, now]``."""
        out: dict[Group, tuple[float, float]] = {}
        since = now - window_s
        for (name, labels), buckets in self.data.items():
            if name != series:
                continue
            lab = dict(labels)
            if match and any(lab.get(k) != v for k, v in match.items()):
                continue
            total = count = 0.0
            for start, value, n in reversed(buckets):
                if start + self.bucket_s <= since:
                    break
                total += value
                count += n
            if count or total:
                group = tuple(lab.get(k, "") for k in by)
                s, c = out.get(group, (0.0, 0.0))
                out[group] = (s + total, c + count)
        return out

    def total(self, series: str, window_s: float, now: float) -> float:
        return sum(s for s, _ in self.sum_by(series, (), window_s, now).values())


@dataclass(frozen=True)
class Mark:
    """One piece of evidence: where a flagged finding is (never its text)."""

    t: float
    conversation_id: str
    turn: int
    label: str
    labels: Labels


class Evidence:
    def __init__(self, per_key: int = EVIDENCE_PER_KEY) -> None:
        self.per_key = per_key
        self.data: dict[tuple[str, str, Labels], deque[Mark]] = {}

    def add(self, kind: str, name: str, mark: Mark) -> None:
        key = (kind, name, mark.labels)
        self.data.setdefault(key, deque(maxlen=self.per_key)).append(mark)

    def find(self, kind: str, name: str, group: Mapping[str, str], window_s: float,
             now: float, limit: int = 10) -> list[Mark]:
        marks = [
            m for (k, n, labels), dq in self.data.items() if k == kind and n == name
            and all(dict(labels).get(g) == v for g, v in group.items())
            for m in dq if m.t > now - window_s
        ]
        return sorted(marks, key=lambda m: m.t)[-limit:]

    def prune(self, now: float, horizon_s: float) -> None:
        for key in list(self.data):
            dq = self.data[key]
            while dq and dq[0].t < now - horizon_s:
                dq.popleft()
            if not dq:
                del self.data[key]
