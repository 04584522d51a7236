"""The bundled example data: transcripts valid per the data model, planted-case manifests pointing
at real turns, bad events whose expected reasons match the file, generated files up to date."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REQUIRED = {"conversation_id": str, "turn": int, "role": str, "text": str, "ts": str}
OPTIONAL = {"bot_id": str, "model": str, "tenant": str, "lang": str}
BOTS = {"helpdesk-a", "helpdesk-b", "billing-bot"}
WINDOW = (datetime(2026, 11, 7, tzinfo=UTC), datetime(2026, 11, 21, tzinfo=UTC))
SIGNALS = {"pii", "empathy", "repetition", "toxicity", "bias", "manipulation"}
LABELS = {
    "pii.email_address", "pii.phone_number", "pii.credit_card", "pii.us_ssn", "pii.iban_code",
    "pii.ip_address", "pii.person", "pii.location", "pii.street_address", "pii.leak",
    "empathy.advice_before_ack", "empathy.formulaic_restatement", "empathy.overempathising",
    "empathy.length_inflated", "empathy.alignment", "repetition.stock_phrase",
    "repetition.stock_empathy",
    "repetition.near_duplicate", "toxicity.toxicity", "toxicity.insult", "toxicity.obscene",
    "bias.stereotype", "bias.user_group", "manipulation.claims_human", "manipulation.dependence",
    "manipulation.discourage_help", "manipulation.guilt", "manipulation.urgency",
    "manipulation.retention_hook", "manipulation.flattery", "manipulation.data_solicitation",
}
REASONS = {
    "invalid_json", "not_an_object", "missing_field", "wrong_type", "empty_text", "text_too_long",
    "unknown_role", "invalid_turn_index", "invalid_timestamp", "invalid_utf8",
    "conflicting_duplicate",
}
STOCK = ("I'm sorry to hear that", "I completely understand", "Thank you for reaching out",
         "I understand how you feel")


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _parse_ts(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError("RFC 3339 needs an offset")
    return moment


@pytest.fixture(scope="module")
def events() -> list[dict[str, Any]]:
    lines = (EXAMPLES / "transcripts.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def conversations(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    convs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        convs[event["conversation_id"]].append(event)
    return convs


@pytest.fixture(scope="module")
def planted() -> list[dict[str, Any]]:
    return json.loads((EXAMPLES / "planted.json").read_text("utf-8"))


def test_every_event_is_valid_per_the_data_model(events: list[dict[str, Any]]) -> None:
    for event in events:
        for key, kind in {**REQUIRED, **OPTIONAL}.items():
            assert type(event[key]) is kind, (event["conversation_id"], key)
        assert set(event) == set(REQUIRED) | set(OPTIONAL)
        assert event["role"] in ("user", "assistant")
        assert 0 < len(event["text"].strip()) <= 20_000
        assert WINDOW[0] <= _parse_ts(event["ts"]) < WINDOW[1]
        assert event["bot_id"] in BOTS and event["tenant"] in ("acme", "globex")
        assert event["lang"] == "en" and event["model"].startswith("support-llm-2026-")


def test_conversations_are_contiguous_alternating_and_ordered(
    conversations: dict[str, list[dict[str, Any]]],
) -> None:
    assert len(conversations) >= 90
    for cid, turns in conversations.items():
        assert [t["turn"] for t in turns] == list(range(len(turns))), cid
        assert 3 <= len(turns) <= 10, cid
        assert [t["role"] for t in turns] == ["user", "assistant"] * (len(turns) // 2) + (
            ["user"] if len(turns) % 2 else []), cid
        stamps = [_parse_ts(t["ts"]) for t in turns]
        assert all(a < b for a, b in zip(stamps, stamps[1:], strict=False)), cid
        assert len({(t["bot_id"], t["model"], t["tenant"]) for t in turns}) == 1, cid
    assert {t[0]["bot_id"] for t in conversations.values()} == BOTS


def _turn(convs: dict[str, list[dict[str, Any]]], row: dict[str, Any]) -> dict[str, Any]:
    turns = convs[row["conversation_id"]]
    assert 0 <= row["turn"] < len(turns), row
    return turns[row["turn"]]


def test_planted_cases_point_at_turns_of_the_right_role(
    planted: list[dict[str, Any]], conversations: dict[str, list[dict[str, Any]]],
) -> None:
    for row in planted:
        assert set(row) == {"conversation_id", "turn", "signal", "expect_label", "note"}
        assert row["expect_label"] in LABELS and row["expect_label"].startswith(row["signal"] + ".")
        role = _turn(conversations, row)["role"]
        if row["expect_label"] == "bias.user_group":
            assert role == "user", row
        elif row["signal"] != "pii" or row["expect_label"] == "pii.leak":
            assert role == "assistant", row
    keys = {(r["conversation_id"], r["turn"], r["expect_label"]) for r in planted}
    assert len(keys) == len(planted)


def test_every_signal_and_label_is_planted_several_times(planted: list[dict[str, Any]]) -> None:
    assert {row["signal"] for row in planted} == SIGNALS
    counts = Counter(row["expect_label"] for row in planted)
    assert {label: n for label, n in counts.items() if n < 3} == {}
    assert set(counts) == LABELS
    notes = Counter(r["note"] for r in planted if r["expect_label"] == "empathy.alignment")
    assert set(notes) == {"low", "high"} and notes["low"] >= 3


def test_near_misses_point_at_turns_and_never_contradict_the_plants(
    planted: list[dict[str, Any]], conversations: dict[str, list[dict[str, Any]]],
) -> None:
    near = json.loads((EXAMPLES / "near_misses.json").read_text("utf-8"))
    expected = {(r["conversation_id"], r["turn"], r["expect_label"]) for r in planted}
    assert len(near) >= 10
    for row in near:
        _turn(conversations, row)
        assert row["not_label"] in LABELS
        assert (row["conversation_id"], row["turn"], row["not_label"]) not in expected


def test_helpdesk_b_is_formulaic_and_every_stock_opener_is_planted(
    planted: list[dict[str, Any]], events: list[dict[str, Any]],
) -> None:
    replies = [e for e in events if e["bot_id"] == "helpdesk-b" and e["role"] == "assistant"]
    stock = {(e["conversation_id"], e["turn"]) for e in replies if e["text"].startswith(STOCK)}
    assert len(stock) / len(replies) > 0.6
    labels = {(r["conversation_id"], r["turn"]): r["expect_label"] for r in planted
              if r["expect_label"] in ("repetition.stock_phrase", "repetition.stock_empathy")}
    assert stock == set(labels)
    # the empathy formulas are stock empathy; the courtesy opener is a procedural stock phrase
    texts = {(e["conversation_id"], e["turn"]): e["text"] for e in replies}
    for key, label in labels.items():
        courtesy = texts[key].startswith("Thank you for reaching out")
        assert label == ("repetition.stock_phrase" if courtesy else "repetition.stock_empathy")


def test_generated_files_match_their_sources() -> None:
    for name, content in _load("build_transcripts").render().items():
        assert (EXAMPLES / name).read_text("utf-8") == content, f"re-run the builder ({name})"
    data, expected = _load("make_bad_events").build()
    assert (EXAMPLES / "bad_events.jsonl").read_bytes() == data
    assert json.loads((EXAMPLES / "bad_events.expected.json").read_text("utf-8")) == expected
    data, hostile = _load("make_hostile_events").build()
    assert (EXAMPLES / "hostile_events.jsonl").read_bytes() == data
    assert json.loads((EXAMPLES / "hostile_events.expected.json").read_text("utf-8")) == hostile


def _reason(raw: bytes, seen: dict[tuple[str, int], bytes]) -> str | None:
    """A small reference classifier for the reason codes (None: stored or silently skipped)."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "invalid_utf8"
    except json.JSONDecodeError:
        return "invalid_json"
    if not isinstance(obj, dict):
        return "not_an_object"
    if set(REQUIRED) - set(obj):
        return "missing_field"
    if obj["text"] is None or obj["text"] == "":
        return "empty_text"
    if isinstance(obj["turn"], float) or (isinstance(obj["turn"], int) and obj["turn"] < 0):
        return "invalid_turn_index"
    if any(not isinstance(obj[k], kind) for k, kind in REQUIRED.items()):
        return "wrong_type"
    if len(obj["text"]) > 20_000:
        return "text_too_long"
    if obj["role"] not in ("user", "assistant"):
        return "unknown_role"
    try:
        _parse_ts(obj["ts"])
    except ValueError:
        return "invalid_timestamp"
    key = (obj["conversation_id"], obj["turn"])
    if key in seen and seen[key] != raw:
        return "conflicting_duplicate"
    seen[key] = raw
    return None


def test_bad_events_expected_reasons_match_the_file() -> None:
    data = (EXAMPLES / "bad_events.jsonl").read_bytes()
    expected = json.loads((EXAMPLES / "bad_events.expected.json").read_text("utf-8"))
    assert set(expected.values()) == REASONS
    assert len(data) < 60_000
    lines = data.split(b"\n")[:-1]
    seen: dict[tuple[str, int], bytes] = {}
    got = {str(n): r for n, raw in enumerate(lines, 1) if raw.strip() and (r := _reason(raw, seen))}
    assert got == expected
    good = [n for n, raw in enumerate(lines, 1) if raw.strip() and str(n) not in expected]
    for n in map(int, expected):
        assert n - 1 in good and n + 1 in good, f"bad line {n} must sit between good lines"
    assert len(good) - len(set(lines[n - 1] for n in good)) == 1, "exactly one exact duplicate"
    assert sum(1 for raw in lines if not raw.strip()) == 2
