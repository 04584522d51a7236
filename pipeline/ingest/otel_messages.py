"""The chat messages of one OpenTelemetry span, in the three conventions instrumentations use.

- GenAI semantic conventions (current): ``gen_ai.input.messages`` / ``gen_ai.output.messages``,
  a JSON string (or a structured attribute) of ``{"role", "parts": [{"type": "text",
  "content"}]}`` objects; ``gen_ai.system_instructions`` holds the system prompt.
- GenAI span events (older instrumentations): ``gen_ai.system.message``,
  ``gen_ai.user.message``, ``gen_ai.assistant.message``, ``gen_ai.tool.message`` (the input, in
  order) and ``gen_ai.choice`` (the output), their content in a ``content`` attribute or a
  JSON body attribute.
- OpenInference (Arize Phoenix) and OpenLLMetry: flattened attributes,
  ``llm.input_messages.N.message.role`` / ``.content`` / ``.contents.M.message_content.text``
  and ``llm.output_messages.N...``; ``gen_ai.prompt.N.role`` / ``gen_ai.completion.N.content``.

Pure: attribute dicts in, ``Message`` lists out. A malformed value raises ``BadMessages`` whose
text names the attribute, never its content.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pipeline.ingest import limits

INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
# Span events of the older GenAI conventions: event name -> (role, is it output).
EVENT_ROLES = {
    "gen_ai.system.message": ("system", False),
    "gen_ai.user.message": ("user", False),
    "gen_ai.assistant.message": ("assistant", False),
    "gen_ai.tool.message": ("tool", False),
    "gen_ai.choice": ("assistant", True),
}
# Attributes that may hold an event's body as JSON (SDKs that put log-event bodies on spans).
EVENT_BODY_KEYS = ("gen_ai.event.content", "event.body", "body")
# Flattened conventions: (input prefix, output prefix, role key, content key).
FLATTENED = (
    ("llm.input_messages.", "llm.output_messages.", "message.role", "message.content"),
    ("gen_ai.prompt.", "gen_ai.completion.", "role", "content"),
)
_CONTENTS = re.compile(r"message\.contents\.(\d+)\.message_content\.(type|text)")
# Roles as chatmon reads them; Gemini says "model", OpenAI's newer APIs "developer".
ROLE_ALIASES = {"model": "assistant", "developer": "system", "function": "tool",
                "human": "user", "ai": "assistant"}


class BadMessages(ValueError):
    """A message attribute that is not the shape its convention says (the text names the
    attribute only)."""


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # user, assistant, system, tool, or what the span said
    text: str | None  # the text parts joined; None when the message has none (a tool call)


@dataclass(frozen=True, slots=True)
class SpanMessages:
    convention: str  # "semconv", "events", "openinference", "openllmetry" or "" (none)
    inputs: list[Message]
    outputs: list[Message]
    system: bool  # system instructions outside the message lists (gen_ai.system_instructions)


def extract(attrs: dict[str, Any], events: list[tuple[str, dict[str, Any]]]) -> SpanMessages:
    """The span's messages under the first convention that has any."""
    if INPUT_MESSAGES in attrs or OUTPUT_MESSAGES in attrs:
        # Only counted, never a turn: a malformed value does not cost the span its turns.
        system = attrs.get(SYSTEM_INSTRUCTIONS) not in (None, "", "[]", [])
        return SpanMessages("semconv", _semconv(attrs, INPUT_MESSAGES),
                            _semconv(attrs, OUTPUT_MESSAGES), system)
    chat_events = [(name, a) for name, a in events if name in EVENT_ROLES]
    if chat_events:
        inputs: list[Message] = []
        outputs: list[Message] = []
        for name, a in chat_events:
            role, is_output = EVENT_ROLES[name]
            (outputs if is_output else inputs).append(Message(role, _event_text(name, a)))
        return SpanMessages("events", inputs, outputs, False)
    for (inp, out, role_key, content_key), name in zip(FLATTENED,
                                                       ("openinference", "openllmetry"),
                                                       strict=True):
        if any(k.startswith((inp, out)) for k in attrs):
            return SpanMessages(name, _flattened(attrs, inp, role_key, content_key),
                                _flattened(attrs, out, role_key, content_key), False)
    return SpanMessages("", [], [], False)


def role_of(value: Any) -> str:
    role = value.strip().lower() if isinstance(value, str) else ""
    return ROLE_ALIASES.get(role, role)


def _json_list(attrs: dict[str, Any], key: str) -> list[Any]:
    value = attrs[key]
    if isinstance(value, str):
        try:
            value = limits.loads(value)
        except ValueError as exc:  # invalid JSON or nested too deep
            raise BadMessages(f"{key} is not valid JSON") from exc
    if isinstance(value, dict):  # one message instead of a list
        value = [value]
    if not isinstance(value, list):
        raise BadMessages(f"{key} is not a list of messages")
    return value


def _semconv(attrs: dict[str, Any], key: str) -> list[Message]:
    if key not in attrs:
        return []
    out = []
    for item in _json_list(attrs, key):
        if not isinstance(item, dict):
            raise BadMessages(f"{key} holds an item that is not a message object")
        parts = item.get("parts")
        if isinstance(parts, list):
            texts = [p["content"] for p in parts if isinstance(p, dict)
                     and p.get("type", "text") == "text" and isinstance(p.get("content"), str)]
            text = "\n".join(texts) if texts else None
        else:  # the pre-parts shape some SDKs still send: {"role", "content": "..."}
            text = _content_text(item.get("content"))
        out.append(Message(role_of(item.get("role")), text))
    return out


def _content_text(content: Any) -> str | None:
    """A ``content`` value as text: a string, or the text items of an OpenAI-style list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        items = [c.get("text") or c.get("content") for c in content
                 if isinstance(c, dict) and c.get("type", "text") == "text"]
        texts = [t for t in items if isinstance(t, str)]
        return "\n".join(texts) if texts else None
    return None


def _event_text(name: str, attrs: dict[str, Any]) -> str | None:
    body: Any = attrs
    for key in EVENT_BODY_KEYS:
        if key in attrs:
            body = attrs[key]
            if isinstance(body, str):
                try:
                    body = limits.loads(body)
                except ValueError as exc:
                    raise BadMessages(f"the {key} attribute of a {name} event is not valid "
                                      "JSON") from exc
            break
    if not isinstance(body, dict):
        return None
    message = body.get("message")  # gen_ai.choice: {"index", "finish_reason", "message"}
    if isinstance(message, str):
        try:
            message = limits.loads(message)
        except ValueError:  # not JSON (or nested too deep): the text itself
            message = {"content": message}
    if isinstance(message, dict) and "content" in message:
        return _content_text(message["content"])
    return _content_text(body.get("content"))


def _flattened(attrs: dict[str, Any], prefix: str, role_key: str,
               content_key: str) -> list[Message]:
    """``prefix``N.``role_key`` / ``content_key`` (and OpenInference's multi-part contents) as
    messages in the order of N."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        number, _, rest = key[len(prefix):].partition(".")
        if not number.isdigit() or len(number) > 6:
            continue
        found.setdefault(int(number), {})[rest] = value
    out = []
    for index in sorted(found):
        fields = found[index]
        text = fields.get(content_key)
        if not isinstance(text, str):
            parts: dict[int, str] = {}
            for rest, value in fields.items():
                m = _CONTENTS.fullmatch(rest)
                if m and m.group(2) == "text" and isinstance(value, str):
                    parts[int(m.group(1))] = value
            text = "\n".join(parts[i] for i in sorted(parts)) if parts else None
        out.append(Message(role_of(fields.get(role_key)), text))
    return out
