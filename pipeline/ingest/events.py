"""Turn events: parsing and validation of one raw record into a ``Turn`` or a rejection with a
machine-readable reason. Nothing here raises for bad input; every failure is a ``Rejected``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from detectors.base import Turn
from pipeline.ingest import limits

# Machine-readable dead-letter reasons (the full list is in docs/input.md).
INVALID_UTF8 = "invalid_utf8"
INVALID_JSON = "invalid_json"
NOT_AN_OBJECT = "not_an_object"
MISSING_FIELD = "missing_field"
WRONG_TYPE = "wrong_type"
EMPTY_TEXT = "empty_text"
TEXT_TOO_LONG = "text_too_long"
UNKNOWN_ROLE = "unknown_role"
INVALID_TURN_INDEX = "invalid_turn_index"
INVALID_TIMESTAMP = "invalid_timestamp"
CONFLICTING_DUPLICATE = "conflicting_duplicate"
DETECTOR_ERROR = "detector_error"
# Limits of the store as validation rules (pipeline/ingest/limits.py).
EVENT_TOO_LARGE = "event_too_large"
NESTING_TOO_DEEP = "nesting_too_deep"
NUL_CHARACTER = "nul_character"
LONE_SURROGATE = "lone_surrogate"
TURN_OUT_OF_RANGE = "turn_out_of_range"
FIELD_TOO_LONG = "field_too_long"
INVALID_LABEL = "invalid_label"
INVALID_LANG = "invalid_lang"
INVALID_CONVERSATION_ID = "invalid_conversation_id"
METADATA_TOO_LARGE = "metadata_too_large"
# An event whose processing raised although it passed validation: it alone is dead-lettered.
PROCESSING_ERROR = "processing_error"
# A turn the redaction stage could not analyse, under CHATMON_REDACTION_FAILURE=dead_letter: it
# is dead-lettered without its text (pipeline/scoring/redaction.py).
REDACTION_FAILED = "redaction_failed"
REASONS = (
    INVALID_UTF8, INVALID_JSON, NOT_AN_OBJECT, MISSING_FIELD, WRONG_TYPE, EMPTY_TEXT,
    TEXT_TOO_LONG, UNKNOWN_ROLE, INVALID_TURN_INDEX, INVALID_TIMESTAMP, CONFLICTING_DUPLICATE,
    DETECTOR_ERROR, EVENT_TOO_LARGE, NESTING_TOO_DEEP, NUL_CHARACTER, LONE_SURROGATE,
    TURN_OUT_OF_RANGE, FIELD_TOO_LONG, INVALID_LABEL, INVALID_LANG, INVALID_CONVERSATION_ID,
    METADATA_TOO_LARGE, PROCESSING_ERROR, REDACTION_FAILED,
)

KNOWN_FIELDS = limits.KNOWN_FIELDS
REQUIRED = ("conversation_id", "turn", "role", "text", "ts")


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One input record and where it came from (file line, HTTP event, topic/partition/offset)."""

    source: str
    position: str
    data: bytes | str | dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    record: RawRecord
    reason: str
    detail: str
    conversation_id: str | None = None
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class Accepted:
    record: RawRecord
    turn: Turn
    content_hash: str


class TurnEvent(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    conversation_id: StrictStr
    turn: StrictInt
    role: StrictStr
    text: StrictStr
    ts: datetime
    bot_id: StrictStr | None = None
    model: StrictStr | None = None
    tenant: StrictStr | None = None
    lang: StrictStr | None = None
    metadata: dict[str, Any] | None = None


def validate(record: RawRecord, max_text_chars: int) -> Accepted | Rejected:
    """Parse and validate one record. Checks run in a fixed order so each bad event gets the one
    most specific reason. No detail quotes an input value: it names the field and the rule."""
    data = record.data
    if isinstance(data, bytes | str) and len(data) > limits.MAX_EVENT_BYTES:
        return Rejected(record, EVENT_TOO_LARGE, f"event over {limits.MAX_EVENT_BYTES} bytes")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Rejected(record, INVALID_UTF8, f"invalid UTF-8 at byte {exc.start}")
    clean = isinstance(data, str) and limits.clean_text(data)
    if isinstance(data, str):
        try:
            data = limits.loads(data)
        except limits.TooDeep:
            return Rejected(record, NESTING_TOO_DEEP,
                            f"JSON nested deeper than {limits.MAX_DEPTH} levels")
        except ValueError as exc:
            return Rejected(record, INVALID_JSON, limits.json_error(exc))
    if not isinstance(data, dict):
        return Rejected(record, NOT_AN_OBJECT, f"expected a JSON object, got {_json_type(data)}")
    conv = limits.valid_id(data.get("conversation_id"))
    turn_ix = limits.valid_turn(data.get("turn"))
    reject = (None if clean else limits.scan(data)) or _semantic_checks(data, max_text_chars)
    if reject is not None:
        return Rejected(record, reject[0], reject[1], conv, turn_ix)
    try:
        event = TurnEvent.model_validate(data)
    except ValidationError as exc:
        return Rejected(record, *_classify(exc), conv, turn_ix)
    turn = _to_turn(event)
    if turn.metadata and len(_compact(dict(turn.metadata))) > limits.MAX_METADATA_CHARS:
        return Rejected(record, METADATA_TOO_LARGE, "metadata (with unknown fields) is over "
                        f"{limits.MAX_METADATA_CHARS} characters as JSON", conv, turn_ix)
    return Accepted(record, turn, content_hash(data))


def _semantic_checks(data: dict[str, Any], max_text_chars: int) -> tuple[str, str] | None:
    missing = [f for f in REQUIRED if f not in data]
    if missing:
        return MISSING_FIELD, f"missing required field(s): {', '.join(missing)}"
    text = data["text"]
    if text is None or (isinstance(text, str) and not text.strip()):
        return EMPTY_TEXT, "text is null or empty"
    if isinstance(text, str) and len(text) > max_text_chars:
        return TEXT_TOO_LONG, f"text has {len(text)} characters; the limit is {max_text_chars}"
    role = data["role"]
    if isinstance(role, str) and role not in ("user", "assistant"):
        return UNKNOWN_ROLE, "role must be 'user' or 'assistant'"
    turn = data["turn"]
    if isinstance(turn, float) or (type(turn) is int and turn < 0):
        return INVALID_TURN_INDEX, "turn must be a non-negative integer"
    if type(turn) is int and turn > limits.MAX_TURN:
        return TURN_OUT_OF_RANGE, f"turn is over {limits.MAX_TURN} (2^31-1)"
    return _timestamp_problem(data["ts"]) or limits.field_problem(data)


def _timestamp_problem(ts: Any) -> tuple[str, str] | None:
    if not isinstance(ts, str):
        return INVALID_TIMESTAMP, f"ts must be an RFC 3339 string, got {_json_type(ts)}"
    try:
        parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return INVALID_TIMESTAMP, "ts is not an RFC 3339 timestamp"
    if parsed.tzinfo is None:
        return INVALID_TIMESTAMP, "ts has no time zone offset (RFC 3339 requires one)"
    try:
        parsed.astimezone(UTC)
    except OverflowError:  # e.g. 0001-01-01T00:00:00+05:00 is before year 1 in UTC
        return INVALID_TIMESTAMP, "ts is out of range in UTC"
    return None


def _classify(exc: ValidationError) -> tuple[str, str]:
    """A pydantic error as a reason and a detail naming only the top-level field (pydantic's
    own messages can quote the input)."""
    err = exc.errors()[0]
    field = str(err["loc"][0]) if err["loc"] else "the event"
    field = field if field in KNOWN_FIELDS else "metadata"
    if err["type"] == "missing":
        return MISSING_FIELD, f"missing required field: {field}"
    if field == "ts":
        return INVALID_TIMESTAMP, f"ts is not a valid timestamp ({err['type']})"
    return WRONG_TYPE, f"{field} has the wrong type or value ({err['type']})"


def _to_turn(event: TurnEvent) -> Turn:
    extra = dict(event.model_extra or {})
    metadata = {**(event.metadata or {}), **extra}  # unknown fields are kept in metadata
    return Turn(
        conversation_id=event.conversation_id,
        turn=event.turn,
        role=event.role,  # type: ignore[arg-type]  (checked above)
        text=event.text,
        ts=event.ts,
        bot_id=event.bot_id,
        model=event.model,
        tenant=event.tenant,
        lang=event.lang,
        metadata=MappingProxyType(metadata),
    )


def content_hash(data: dict[str, Any]) -> str:
    """Hash of an event's content, independent of key order: equal for exact duplicates."""
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                           default=str)
    # surrogatepass: validation rejects lone surrogates first, and a hash must never raise.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _json_type(v: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(v), "a number" if isinstance(v, int | float) else type(v).__name__
    )
