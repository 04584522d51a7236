"""Validation is the only gate: every limit of the store is a rule with its own reason, equal to
the column it protects, and no detail quotes the value it rejects."""

from __future__ import annotations

import json
import time

import pytest
from sqlalchemy import Integer, String

from pipeline.ingest import events, limits
from pipeline.ingest.events import Accepted, RawRecord, Rejected, validate
from pipeline.store.models import DeadLetterRow, FindingRow, TurnRow

GOOD = {"conversation_id": "c1", "turn": 0, "role": "user", "text": "hello",
        "ts": "2026-11-20T10:00:00Z"}
NAME = "Jonathan Whitfield"


def check(data: object) -> Accepted | Rejected:
    raw = data if isinstance(data, bytes | str) else json.dumps(data)
    return validate(RawRecord("test", "line 1", raw), max_text_chars=20_000)


def nested(levels: int) -> dict[str, object]:
    """An object ``levels`` deep."""
    value: dict[str, object] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"k": value}
    return value


# (event or raw text, reason) with the near miss (None: accepted) right beside each limit.
CASES = [
    ({**GOOD, "text": "bad \ud800 here"}, events.LONE_SURROGATE),
    ({**GOOD, "text": "pair \ud83d\ude00 is fine"}, None),
    ({**GOOD, "metadata": {"note\udc00": 1}}, events.LONE_SURROGATE),
    ({**GOOD, "text": "bad \x00 here"}, events.NUL_CHARACTER),
    ({**GOOD, "tenant": "acme\x00"}, events.NUL_CHARACTER),
    ({**GOOD, "metadata": {"a": ["x\x00"]}}, events.NUL_CHARACTER),
    ({**GOOD, "text": "a tab\tand a bell \x07 are fine"}, None),
    ("[" * 10_000 + "]" * 10_000, events.NESTING_TOO_DEEP),
    ({**GOOD, "metadata": nested(600)}, events.NESTING_TOO_DEEP),
    ({**GOOD, "metadata": nested(20)}, events.NESTING_TOO_DEEP),  # 21 levels with the event
    ({**GOOD, "metadata": nested(19)}, None),
    ({**GOOD, "text": "[" * 5000}, None),  # brackets inside a string do not nest
    ({**GOOD, "turn": 2**63}, events.TURN_OUT_OF_RANGE),
    ({**GOOD, "turn": 2**63 - 1}, events.TURN_OUT_OF_RANGE),
    ({**GOOD, "turn": 2**31}, events.TURN_OUT_OF_RANGE),
    ({**GOOD, "turn": 2**31 - 1}, None),
    ({**GOOD, "turn": -1}, events.INVALID_TURN_INDEX),
    ({**GOOD, "turn": True}, events.WRONG_TYPE),
    ('{"conversation_id": "c1", "turn": 0, "role": "user", "text": "x", '
     '"ts": "2026-11-20T10:00:00Z", "metadata": {"n": 1e400}}', events.INVALID_JSON),
    ({**GOOD, "metadata": {"n": 10**30, "f": 1e300}}, None),
    ({**GOOD, "conversation_id": "c" * 201}, events.FIELD_TOO_LONG),
    ({**GOOD, "conversation_id": "c" * 200}, None),
    ({**GOOD, "conversation_id": "eve.baxter@example.com"}, events.INVALID_CONVERSATION_ID),
    ({**GOOD, "conversation_id": f"{NAME}"}, events.INVALID_CONVERSATION_ID),
    ({**GOOD, "conversation_id": ""}, events.INVALID_CONVERSATION_ID),
    ({**GOOD, "conversation_id": "c1\n"}, events.INVALID_CONVERSATION_ID),
    ({**GOOD, "conversation_id": "zendesk:215467329871234"}, None),  # ticket numbers: digits
    ({**GOOD, "conversation_id": "9b2f6c1e-7d4a-4f0e-a2c3-5e8d9f1a2b3c"}, None),
    ({**GOOD, "conversation_id": "conv/ünïcode#1"}, None),
    ({**GOOD, "bot_id": "b" * 201}, events.FIELD_TOO_LONG),
    ({**GOOD, "model": "m" * 201}, events.FIELD_TOO_LONG),
    ({**GOOD, "tenant": "t" * 201}, events.FIELD_TOO_LONG),
    ({**GOOD, "bot_id": "b" * 200, "model": "m" * 200, "tenant": "t" * 200}, None),
    ({**GOOD, "lang": "en-" + "a" * 14}, events.FIELD_TOO_LONG),
    ({**GOOD, "lang": "en-US-x-private1"}, None),  # 16 characters
    ({**GOOD, "lang": "en US"}, events.INVALID_LANG),
    ({**GOOD, "lang": "pt_BR"}, None),
    ({**GOOD, "lang": ""}, None),  # an empty tag counts as none
    ({**GOOD, "bot_id": NAME}, events.INVALID_LABEL),
    ({**GOOD, "tenant": "ops@example.com"}, events.INVALID_LABEL),
    ({**GOOD, "model": "m-4111111111111111"}, events.INVALID_LABEL),
    ({**GOOD, "bot_id": "bot-5550147"}, events.INVALID_LABEL),  # 7 digits: a phone number
    ({**GOOD, "model": "claude-3-opus-20240229"}, None),  # 8 digits that are a date
    ({**GOOD, "model": "claude-3-opus-20241329"}, events.INVALID_LABEL),  # month 13: no date
    ({**GOOD, "model": "meta-llama/Llama-3.1-8B-Instruct", "bot_id": "eu:helpdesk_2+b"}, None),
    ({**GOOD, "bot_id": "-leading-dash"}, events.INVALID_LABEL),
    ({**GOOD, "metadata": {"notes": "n" * 17_000}}, events.METADATA_TOO_LARGE),
    ({**GOOD, "channel": "n" * 17_000}, events.METADATA_TOO_LARGE),  # unknown fields count
    ({**GOOD, "metadata": {"notes": "n" * 16_000}}, None),
    ({**GOOD, "ts": "0001-01-01T00:00:00+05:00"}, events.INVALID_TIMESTAMP),
    ({**GOOD, "ts": "9999-12-31T23:00:00-01:30"}, events.INVALID_TIMESTAMP),
    ({**GOOD, "ts": "0001-01-01T00:00:00-05:00"}, None),
    (b"x" * (limits.MAX_EVENT_BYTES + 1), events.EVENT_TOO_LARGE),
]


@pytest.mark.parametrize(("data", "reason"), CASES)
def test_each_limit_has_its_reason_and_a_near_miss_passes(data: object, reason: str | None) -> None:
    result = check(data)
    if reason is None:
        assert isinstance(result, Accepted), getattr(result, "detail", "")
    else:
        assert isinstance(result, Rejected) and result.reason == reason, result
        assert result.detail and len(result.detail) < 200


VALUED = [
    ({**GOOD, "role": f"{NAME} 742 Evergreen Terrace"}, ("Whitfield", "Evergreen")),
    ({**GOOD, "turn": 12345678901234567890}, ("12345678901234567890",)),
    ({**GOOD, "turn": "seven-0147"}, ("seven-0147",)),
    ({**GOOD, "ts": "Whitfield-11-20"}, ("Whitfield",)),
    ({**GOOD, "ts": 20261120}, ("20261120",)),
    ({**GOOD, "bot_id": NAME}, ("Whitfield",)),
    ({**GOOD, "lang": "Whitfield Jonathan"}, ("Whitfield",)),
    ({**GOOD, "metadata": "Whitfield"}, ("Whitfield",)),
    ({**GOOD, "metadata": {"Whitfield": "x\x00"}}, ("Whitfield",)),
    ({**GOOD, "Whitfield\ud800": 1}, ("Whitfield",)),
    ({"Whitfield": 1}, ("Whitfield",)),
    ('{"conversation_id": "Whitfield", "text": "eve@example.com" ', ("Whitfield", "eve@")),
    ('{"turn": 1e99999}', ("1e99999",)),
    ('{"turn": ' + "9" * 5000 + "}", ("9999999",)),
    ({**GOOD, "conversation_id": "   "}, ("   '",)),
]


@pytest.mark.parametrize(("data", "values"), VALUED)
def test_details_name_the_field_and_rule_never_the_value(data: object,
                                                          values: tuple[str, ...]) -> None:
    result = check(data)
    assert isinstance(result, Rejected)
    for value in values:
        assert value not in result.detail, (result.reason, result.detail)


def test_a_dead_letter_keeps_only_ids_the_store_can_hold() -> None:
    long_id = {**GOOD, "conversation_id": "c" * 201, "role": "system", "turn": 2**40}
    result = check(long_id)
    assert isinstance(result, Rejected) and result.reason == events.UNKNOWN_ROLE
    assert result.conversation_id is None and result.turn is None
    ok = check({**GOOD, "role": "system", "turn": 3})
    assert isinstance(ok, Rejected) and ok.conversation_id == "c1" and ok.turn == 3
    nul = check({**GOOD, "conversation_id": "c\x00", "role": "system"})
    assert isinstance(nul, Rejected) and nul.conversation_id is None


# Column -> the limit validation applies to what goes into it.
COLUMNS = [
    (TurnRow.conversation_id, limits.MAX_ID_CHARS), (TurnRow.bot_id, limits.MAX_ID_CHARS),
    (TurnRow.model, limits.MAX_ID_CHARS), (TurnRow.tenant, limits.MAX_ID_CHARS),
    (TurnRow.lang, limits.MAX_LANG_CHARS), (FindingRow.conversation_id, limits.MAX_ID_CHARS),
    (FindingRow.bot_id, limits.MAX_ID_CHARS), (FindingRow.model, limits.MAX_ID_CHARS),
    (FindingRow.tenant, limits.MAX_ID_CHARS), (DeadLetterRow.conversation_id, limits.MAX_ID_CHARS),
    (TurnRow.role, len("assistant")),
]


@pytest.mark.parametrize(("column", "limit"), COLUMNS, ids=lambda c: str(getattr(c, "key", c)))
def test_string_limits_equal_the_columns(column, limit: int) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(column.type, String)
    assert column.type.length >= limit
    if column.key != "role":
        assert column.type.length == limit


def test_turn_range_fits_the_integer_columns() -> None:
    for column in (TurnRow.turn, FindingRow.turn, DeadLetterRow.turn):
        assert isinstance(column.type, Integer)  # 32-bit signed on PostgreSQL
    assert limits.MAX_TURN == 2**31 - 1


def test_depth_check_is_linear_on_hostile_shapes() -> None:
    shapes = ['"\\"' * 300_000, "[]" * 500_000, "[" * 1_000_000, "]" + "[" * 999_999,
              json.dumps({"text": "[{" * 400_000})]
    for text in shapes:
        t0 = time.perf_counter()
        limits.too_deep(text)
        assert time.perf_counter() - t0 < 2.0  # quadratic would take minutes at this size
    assert limits.too_deep("[" * 1_000_000)
    assert not limits.too_deep(json.dumps({"text": "[{" * 400_000}))


@pytest.mark.parametrize(("raw", "unescaped"), [
    ("eve.baxter\\u0040example.com", "eve.baxter@example.com"),
    ("4111\\u00201111\\u00201111\\u00201111", "4111 1111 1111 1111"),
    ("\\u0034111 1111", "4111 1111"),
    ('say \\"hi\\"\\n', 'say "hi"\n'),
    ("a\\\\u0040b", "a\\u0040b"),  # an escaped backslash, then plain text
    ("\\ud83d\\ude00", "\U0001f600"),
    ("lone \\ud800 end", "lone \ufffd end"),
    ("not an escape: \\x41 \\u12", "not an escape: \\x41 \\u12"),
])
def test_unescape_json_shows_redaction_what_the_escapes_hide(raw: str, unescaped: str) -> None:
    assert limits.unescape_json(raw) == unescaped


def test_printable_replaces_nul_and_lone_surrogates() -> None:
    assert limits.printable("a\x00b\ud800c\U0001f600") == "a\ufffdb\ufffdc\U0001f600"
    limits.printable("a\x00b\ud800").encode("utf-8")  # encodable: no exception


def test_a_line_over_the_limit_is_not_held_and_the_next_line_is_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pipeline.ingest.readers import count_lines, read_records

    good = json.dumps(GOOD).encode()
    src = tmp_path / "big.jsonl"
    src.write_bytes(good + b"\n" + b"x" * (3 * limits.MAX_EVENT_BYTES) + b"\n" + good)  # no \n
    records = list(read_records(str(src)))
    assert [r.position for r in records] == ["line 1", "line 2", "line 3"]
    assert len(records[1].data) == limits.MAX_EVENT_BYTES + 1  # what stands for the long line
    reasons = [getattr(validate(r, 20_000), "reason", None) for r in records]
    assert reasons == [None, events.EVENT_TOO_LARGE, None]
    assert count_lines(str(src)) == 3
