"""``chatmon produce`` logic without a broker: keys, raw values, invalid lines, stdin, rate."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline.kafka.producer import RateLimiter, produce


class FakeFuture:
    def add_errback(self, _fn: Any) -> None:
        pass


class FakeProducer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.flushed = False

    def send(self, topic: str, key: bytes, value: bytes) -> FakeFuture:
        self.sent.append((topic, key, value))
        return FakeFuture()

    def flush(self) -> None:
        self.flushed = True


GOOD = ('{"conversation_id": "c1", "turn": 0, "role": "user", "text": "hi", '
        '"ts": "2026-01-01T00:00:00Z"}')


def test_valid_lines_are_sent_raw_and_keyed_invalid_ones_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([GOOD, '{"turn": 1}', "", "[1, 2]",
                               GOOD.replace('"c1"', '"c2"').replace('"user"', '"robot"')]) + "\n")
    fake = FakeProducer()
    invalid: list[tuple[str, str, str]] = []
    summary = produce([str(path)], "unused:9092", "turns", producer=fake,
                      on_invalid=lambda *a: invalid.append(a))
    assert fake.sent == [("turns", b"c1", GOOD.encode())]
    assert [(pos, reason) for _, pos, reason in invalid] == [
        ("line 2", "missing_field"), ("line 4", "not_an_object"), ("line 5", "unknown_role")]
    assert summary.sent == 1 and len(summary.invalid) == 3 and fake.flushed


def test_stdin_is_read_with_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(((GOOD + "\n") * 3).encode())))
    fake = FakeProducer()
    assert produce(["-"], "unused:9092", "turns", producer=fake).sent == 3
    assert {json.loads(v)["conversation_id"] for _, _, v in fake.sent} == {"c1"}


@pytest.mark.parametrize("rate, n, at_least", [(50.0, 6, 0.1), (None, 50, 0.0)])
def test_rate_limiter_spaces_sends(rate: float | None, n: int, at_least: float) -> None:
    limiter = RateLimiter(rate)
    t0 = time.perf_counter()
    for _ in range(n):
        limiter.wait()
    elapsed = time.perf_counter() - t0
    assert elapsed >= at_least
    if rate is None:
        assert elapsed < 0.05
