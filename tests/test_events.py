"""Validation: each kind of bad event gets its own machine-readable reason."""

from __future__ import annotations

import json

import pytest

from pipeline.ingest import events
from pipeline.ingest.events import Accepted, RawRecord, Rejected, validate

GOOD = {"conversation_id": "c1", "turn": 0, "role": "user", "text": "hello",
        "ts": "2026-11-20T10:00:00Z"}


def rec(data: object) -> RawRecord:
    if isinstance(data, dict):
        data = json.dumps(data)
    return RawRecord("test", "line 1", data)  # type: ignore[arg-type]


def with_(**changes: object) -> dict[str, object]:
    out = {**GOOD, **changes}
    return {k: v for k, v in out.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xff\xfe not utf-8", events.INVALID_UTF8),
        ('{"conversation_id": "c1", ', events.INVALID_JSON),
        ('{"conversation_id": NaN}', events.INVALID_JSON),
        ("[1, 2, 3]", events.NOT_AN_OBJECT),
        ('"just a string"', events.NOT_AN_OBJECT),
        (with_(text=_DROP), events.MISSING_FIELD),
        (with_(ts=_DROP, role=_DROP), events.MISSING_FIELD),
        (with_(turn="three"), events.WRONG_TYPE),
        (with_(text=42), events.WRONG_TYPE),
        (with_(conversation_id=7), events.WRONG_TYPE),
        (with_(metadata="not a dict"), events.WRONG_TYPE),
        (with_(text=None), events.EMPTY_TEXT),
        (with_(text="   "), events.EMPTY_TEXT),
        (with_(text="x" * 20_001), events.TEXT_TOO_LONG),
        (with_(role="system"), events.UNKNOWN_ROLE),
        (with_(turn=-1), events.INVALID_TURN_INDEX),
        (with_(turn=1.5), events.INVALID_TURN_INDEX),
        (with_(ts="yesterday"), events.INVALID_TIMESTAMP),
        (with_(ts="2026-11-20T10:00:00"), events.INVALID_TIMESTAMP),
        (with_(ts=12345), events.INVALID_TIMESTAMP),
    ],
)
def test_bad_event_reason(data: object, reason: str) -> None:
    result = validate(rec(data), max_text_chars=20_000)
    assert isinstance(result, Rejected), result
    assert result.reason == reason, result.detail
    assert result.detail


def test_text_limit_is_configurable() -> None:
    assert isinstance(validate(rec(with_(text="x" * 50)), max_text_chars=40), Rejected)
    assert isinstance(validate(rec(with_(text="x" * 50)), max_text_chars=50), Accepted)


def test_good_event_keeps_unknown_fields_in_metadata() -> None:
    result = validate(rec(with_(channel="web", metadata={"a": 1}, bot_id="b")), 20_000)
    assert isinstance(result, Accepted)
    assert dict(result.turn.metadata) == {"a": 1, "channel": "web"}
    assert result.turn.bot_id == "b"
    assert result.turn.ts.tzinfo is not None


def test_content_hash_ignores_key_order_and_sees_content() -> None:
    a = events.content_hash({"a": 1, "b": "x"})
    assert a == events.content_hash({"b": "x", "a": 1})
    assert a != events.content_hash({"a": 1, "b": "y"})
