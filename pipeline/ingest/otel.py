"""OpenTelemetry GenAI traces as chatmon turn events: the one mapping ``POST /v1/traces`` and the
Kafka worker share (docs/otel.md has the table per convention).

A chat span carries the conversation so far as its input and the model's reply as its output.
Each user or assistant message with text is a turn, its index its position among those messages
in the conversation (system and tool messages, and assistant messages that only call tools, are
not turns). Every call repeats the history, so a span emits only what is new: the input messages
after the last assistant message (the user's new turn), at the span's start time, and the first
output message, at its end time. A replayed span emits the same events, which the store skips
as exact duplicates; the history was emitted by the spans that produced it.

Pure: a decoded ``ExportTraceServiceRequest`` (or anything with its shape) in, event dicts and
counts out. Events then go through the ordinary validation, redaction and store like
``POST /v1/turns`` events, so nothing here checks lengths or labels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pipeline.ingest.otel_messages import BadMessages, Message, SpanMessages, extract

CONVERSATION_ATTRIBUTES = ("gen_ai.conversation.id", "session.id")
# The operations whose spans are model calls; agent and tool spans repeat or miss messages.
CHAT_OPERATIONS = ("chat", "text_completion", "generate_content")
# Attributes that mark a span as a GenAI model call even when it carries no message content.
GENAI_MARKERS = ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.system",
                 "gen_ai.request.model")
MODEL_ATTRIBUTES = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
TURN_ROLES = ("user", "assistant")

# Reasons a span is refused before its turns are validated (each is a count in the answer).
NO_CONVERSATION_ID = "no_conversation_id"
BAD_MESSAGES = "bad_messages"
BAD_TIMESTAMP = "bad_timestamp"


@dataclass(frozen=True)
class OtelOptions:
    """What the mapping reads beyond the conventions (``CHATMON_OTEL_*`` settings)."""

    conversation_attributes: tuple[str, ...] = ()  # after gen_ai.conversation.id, session.id
    bot_attribute: str = "service.name"
    tenant_attribute: str | None = None
    metadata_attributes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SpanEvent:
    span: int  # the span's index in the request (for the partial-success count)
    position: str  # where it came from, for dead letters: "span 3 message 5"
    event: dict[str, Any]


@dataclass
class Mapped:
    """A request's turn events and what became of each span."""

    events: list[SpanEvent] = field(default_factory=list)
    spans: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  # chat, no_content, not_chat, refused
    refused: dict[int, tuple[str, str]] = field(default_factory=dict)  # span -> reason, detail
    skipped_messages: Counter[str] = field(default_factory=Counter)  # system, tool, ...
    conventions: Counter[str] = field(default_factory=Counter)


def attributes(kvs: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` list as a dict of plain values (bytes values are left out)."""
    return {kv.key: _value(kv.value) for kv in kvs}


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return attributes(v.kvlist_value.values)
    if kind in ("string_value", "bool_value", "int_value", "double_value"):
        return getattr(v, kind)
    return None


def map_request(request: Any, options: OtelOptions) -> Mapped:
    """Every span of an ``ExportTraceServiceRequest`` as turn events, in request order."""
    out = Mapped()
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                index = out.spans
                out.spans += 1
                _map_span(span, index, resource, options, out)
    return out


def _map_span(span: Any, index: int, resource: dict[str, Any], options: OtelOptions,
              out: Mapped) -> None:
    attrs = attributes(span.attributes)
    events = [(e.name, attributes(e.attributes)) for e in span.events]
    if not _is_chat(attrs):
        out.outcomes["not_chat"] += 1
        return
    try:
        messages = extract(attrs, events)
    except BadMessages as exc:
        _refuse(out, index, BAD_MESSAGES, str(exc))
        return
    if not any(m.text for m in messages.inputs + messages.outputs):
        # A model call with content capture off (or not a chat span at all).
        out.outcomes["no_content" if _is_genai(attrs) else "not_chat"] += 1
        return
    out.conventions[messages.convention] += 1
    conversation = _first(attrs, resource, CONVERSATION_ATTRIBUTES
                          + options.conversation_attributes)
    if conversation is None:
        _refuse(out, index, NO_CONVERSATION_ID, "no gen_ai.conversation.id, session.id or "
                "configured conversation attribute")
        return
    try:
        started, ended = _rfc3339(span.start_time_unix_nano), _rfc3339(span.end_time_unix_nano)
    except ValueError as exc:
        _refuse(out, index, BAD_TIMESTAMP, str(exc))
        return
    common = _common(attrs, resource, options, str(conversation))
    model = _first(attrs, {}, MODEL_ATTRIBUTES)
    new = _new_turns(messages, out.skipped_messages)
    out.outcomes["chat"] += 1
    for turn, position, message, is_output in new:
        event = {**common, "turn": turn, "role": message.role, "text": message.text,
                 "ts": ended if is_output else started}
        if is_output and model is not None:
            event["model"] = str(model)
        out.events.append(SpanEvent(index, f"span {index} message {position}", event))


def _new_turns(messages: SpanMessages, skipped: Counter[str]
               ) -> list[tuple[int, int, Message, bool]]:
    """(turn index, message position, message, is output) of what this span adds."""
    turn = 0
    last_assistant = max((i for i, m in enumerate(messages.inputs) if m.role == "assistant"),
                         default=-1)
    if messages.system and last_assistant < 0:  # counted once: where the conversation starts
        skipped["system"] += 1
    new = []
    for i, m in enumerate(messages.inputs):
        if m.role in TURN_ROLES and m.text:
            if i > last_assistant:
                new.append((turn, i, m, False))
            turn += 1
        elif i > last_assistant:  # count each skipped message once, where it is new
            skipped[_skip_kind(m)] += 1
    replies = [m for m in messages.outputs if m.role in ("assistant", "") and m.text]
    if replies:  # one reply: further choices (n > 1) never enter the conversation
        new.append((turn, len(messages.inputs), Message("assistant", replies[0].text), True))
    extra = {"other_choices": max(len(replies) - 1, 0),
             "tool_calls": sum(1 for m in messages.outputs if not m.text)}
    skipped.update({k: n for k, n in extra.items() if n})
    return new


def _skip_kind(m: Message) -> str:
    if m.role == "system":
        return "system"
    if m.role == "tool":
        return "tool"
    return "no_text" if m.role in TURN_ROLES else "other_role"


def _is_chat(attrs: dict[str, Any]) -> bool:
    operation = attrs.get("gen_ai.operation.name")
    if operation is not None and operation not in CHAT_OPERATIONS:
        return False
    kind = attrs.get("openinference.span.kind")
    return kind is None or str(kind).upper() == "LLM"


def _is_genai(attrs: dict[str, Any]) -> bool:
    return (any(k in attrs for k in GENAI_MARKERS)
            or str(attrs.get("openinference.span.kind", "")).upper() == "LLM")


def _common(attrs: dict[str, Any], resource: dict[str, Any], options: OtelOptions,
            conversation: str) -> dict[str, Any]:
    common: dict[str, Any] = {"conversation_id": conversation}
    bot = _first(resource, attrs, (options.bot_attribute,))
    if bot is not None:
        common["bot_id"] = str(bot)
    if options.tenant_attribute:
        tenant = _first(resource, attrs, (options.tenant_attribute,))
        if tenant is not None:
            common["tenant"] = str(tenant)
    metadata = {}
    for name in options.metadata_attributes:
        value = _first(attrs, resource, (name,))
        if value is not None:
            metadata[name] = value
    if metadata:
        common["metadata"] = metadata
    return common


def _first(first: dict[str, Any], second: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first key's value that is set (not empty) in ``first``, then in ``second``."""
    for source in (first, second):
        for key in keys:
            value = source.get(key)
            if value not in (None, "", [], {}):
                return value
    return None


def _refuse(out: Mapped, index: int, reason: str, detail: str) -> None:
    out.outcomes["refused"] += 1
    out.refused[index] = (reason, detail)


def _rfc3339(unix_nano: int) -> str:
    """A span time as RFC 3339; ValueError for none (0) or one no datetime can hold."""
    if not unix_nano:
        raise ValueError("the span has no start or end time")
    seconds, nanos = divmod(unix_nano, 1_000_000_000)
    try:
        ts = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000)
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError("the span's start or end time is out of range") from exc
    return ts.isoformat().replace("+00:00", "Z")
