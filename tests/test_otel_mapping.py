"""The one mapping from OpenTelemetry GenAI spans to chatmon turn events (pipeline/ingest/otel.py),
for the three conventions: turn indexes from the messages' order in the conversation, only what
is new per span, system and tool messages counted and left out, capture-off spans counted, and
nothing from a span's attributes in metadata unless configured."""

from __future__ import annotations

import json

import pytest

from pipeline.ingest.otel import OtelOptions, map_request
from pipeline.ingest.otel_messages import BadMessages, extract
from tests.otel_spans import chat_span, request, semconv, span

SYSTEM = semconv("system", "You are the helpdesk bot of Acme.")


def keys(mapped) -> list[tuple[str, int, str, str]]:  # type: ignore[no-untyped-def]
    return [(e.event["conversation_id"], e.event["turn"], e.event["role"], e.event["text"])
            for e in mapped.events]


def test_a_first_call_gives_the_user_turn_and_the_reply() -> None:
    req = request(chat_span("c1", [SYSTEM, semconv("user", "My parcel is late")],
                            [semconv("assistant", "Sorry to hear that!", finish_reason="stop")]))
    mapped = map_request(req, OtelOptions())
    assert keys(mapped) == [("c1", 0, "user", "My parcel is late"),
                            ("c1", 1, "assistant", "Sorry to hear that!")]
    user, reply = (e.event for e in mapped.events)
    assert user["bot_id"] == reply["bot_id"] == "helpdesk-bot"
    assert reply["model"] == "gpt-test-0613" and "model" not in user  # the reply's model
    assert user["ts"] == "2026-11-18T11:06:40Z"  # the span's start
    assert reply["ts"] == "2026-11-18T11:06:41.500000Z"  # its end
    assert "metadata" not in user and mapped.skipped_messages["system"] == 1
    assert mapped.outcomes == {"chat": 1}


def test_a_span_repeating_the_history_adds_only_the_new_turns_at_their_positions() -> None:
    first = chat_span("c1", [SYSTEM, semconv("user", "Hi")], [semconv("assistant", "Hello!")])
    second = chat_span("c1", [SYSTEM, semconv("user", "Hi"), semconv("assistant", "Hello!"),
                              semconv("user", "Where is my order?")],
                       [semconv("assistant", "Let me check.")], start_s=30)
    mapped = map_request(request(first, second), OtelOptions())
    assert keys(mapped) == [("c1", 0, "user", "Hi"), ("c1", 1, "assistant", "Hello!"),
                            ("c1", 2, "user", "Where is my order?"),
                            ("c1", 3, "assistant", "Let me check.")]
    # The system prompt is counted once per span it is new in (the first).
    assert mapped.skipped_messages["system"] == 1
    # A replay maps to the very same events: the store skips them as exact duplicates.
    again = map_request(request(first, second), OtelOptions())
    assert [e.event for e in again.events] == [e.event for e in mapped.events]


def test_tool_calls_and_results_are_not_turns_and_do_not_shift_indexes() -> None:
    asks = [SYSTEM, semconv("user", "Where is order 12?")]
    calls = chat_span("c2", asks, [semconv("assistant")])  # the reply only calls a tool
    tool_result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                              "response": "shipped"}]}
    answers = chat_span("c2", [*asks, semconv("assistant"), tool_result],
                        [semconv("assistant", "It shipped yesterday.")], start_s=2)
    mapped = map_request(request(calls, answers), OtelOptions())
    assert keys(mapped) == [("c2", 0, "user", "Where is order 12?"),
                            ("c2", 1, "assistant", "It shipped yesterday.")]
    assert mapped.skipped_messages["tool_calls"] == 1 and mapped.skipped_messages["tool"] == 1


def test_only_the_first_of_several_choices_is_the_reply() -> None:
    req = request(chat_span("c3", [semconv("user", "Hi")],
                            [semconv("assistant", "Hello!"), semconv("assistant", "Hey!")]))
    mapped = map_request(req, OtelOptions())
    assert keys(mapped)[-1] == ("c3", 1, "assistant", "Hello!")
    assert mapped.skipped_messages["other_choices"] == 1


def test_span_events_of_the_older_conventions() -> None:
    events = [("gen_ai.system.message", {"content": "Be brief."}),
              ("gen_ai.user.message", {"content": "Hi"}),
              ("gen_ai.assistant.message", {"content": "Hello!"}),
              ("gen_ai.user.message", {"gen_ai.event.content": json.dumps({"content": "Refund?"})}),
              ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                                 "message": json.dumps({"role": "assistant",
                                                        "content": "Refunds take 5 days."})})]
    s = span({"gen_ai.system": "openai", "gen_ai.operation.name": "chat",
              "gen_ai.request.model": "gpt-test", "session.id": "s-9"}, events=events)
    mapped = map_request(request(s), OtelOptions())
    assert keys(mapped) == [("s-9", 2, "user", "Refund?"),
                            ("s-9", 3, "assistant", "Refunds take 5 days.")]
    assert mapped.events[1].event["model"] == "gpt-test"  # no response model: the request's
    assert mapped.conventions == {"events": 1}


def test_openinference_flattened_attributes() -> None:
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-test", "session.id": "oi-1",
             "llm.input_messages.0.message.role": "system",
             "llm.input_messages.0.message.content": "Be kind.",
             "llm.input_messages.1.message.role": "user",
             "llm.input_messages.1.message.contents.0.message_content.type": "text",
             "llm.input_messages.1.message.contents.0.message_content.text": "My card broke",
             "llm.output_messages.0.message.role": "assistant",
             "llm.output_messages.0.message.content": "I can send a new one.",
             "llm.token_count.total": 42, "input.value": "{...raw request...}"}
    mapped = map_request(request(span(attrs)), OtelOptions())
    assert keys(mapped) == [("oi-1", 0, "user", "My card broke"),
                            ("oi-1", 1, "assistant", "I can send a new one.")]
    assert mapped.events[1].event["model"] == "gpt-test"
    assert all("metadata" not in e.event for e in mapped.events)  # input.value etc. not copied
    # An OpenInference chain or agent span repeats messages: not a model call, not mapped.
    chain = span({**attrs, "openinference.span.kind": "CHAIN"})
    assert map_request(request(chain), OtelOptions()).outcomes == {"not_chat": 1}


def test_openllmetry_indexed_prompt_and_completion() -> None:
    attrs = {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-test",
             "gen_ai.conversation.id": "tl-1",
             "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Hello",
             "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Hi!"}
    assert keys(map_request(request(span(attrs)), OtelOptions())) == [
        ("tl-1", 0, "user", "Hello"), ("tl-1", 1, "assistant", "Hi!")]


def test_capture_off_spans_are_counted_not_refused_and_other_spans_ignored() -> None:
    off = span({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-test", "gen_ai.conversation.id": "c"})
    http = span({"http.request.method": "POST", "url.full": "https://api.example/v1"})
    tool = span({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"})
    mapped = map_request(request(off, http, tool), OtelOptions())
    assert mapped.events == [] and mapped.refused == {}
    assert mapped.outcomes == {"no_content": 1, "not_chat": 2}


def test_conversation_bot_tenant_and_metadata_come_from_configured_attributes() -> None:
    s = chat_span("", [semconv("user", "Hi")], [semconv("assistant", "Hello")],
                  **{"langfuse.session.id": "lf-7", "app.channel": "web",
                     "app.secret_note": "call me on 555 0100"})
    req = request(s, service="ignored", **{"app.bot": "billing-bot", "tenant.id": "acme"})
    opts = OtelOptions(conversation_attributes=("langfuse.session.id",),
                       bot_attribute="app.bot", tenant_attribute="tenant.id",
                       metadata_attributes=("app.channel",))
    event = map_request(req, opts).events[0].event
    assert event["conversation_id"] == "lf-7" and event["bot_id"] == "billing-bot"
    assert event["tenant"] == "acme" and event["metadata"] == {"app.channel": "web"}
    # Without that option the span has no conversation: refused, by reason only.
    mapped = map_request(req, OtelOptions())
    assert mapped.events == [] and mapped.refused[0][0] == "no_conversation_id"


@pytest.mark.parametrize("bad", ["[{\"role\": \"user\", \"parts\": [", "42", "[1, 2]",
                                 "[" * 500 + "]" * 500])
def test_malformed_message_attributes_refuse_the_span_without_quoting_it(bad: str) -> None:
    s = chat_span("c", [], [semconv("assistant", "Hello")])
    s.attributes[[kv.key for kv in s.attributes].index("gen_ai.input.messages")
                 ].value.string_value = bad
    mapped = map_request(request(s), OtelOptions())
    reason, detail = mapped.refused[0]
    assert reason == "bad_messages" and "gen_ai.input.messages" in detail and bad not in detail


def test_structured_attribute_values_are_read_like_json_strings() -> None:
    attrs = {"gen_ai.input.messages": [semconv("user", "Hi")],
             "gen_ai.output.messages": [semconv("assistant", "Hello")]}
    msgs = extract(attrs, [])
    assert [(m.role, m.text) for m in msgs.inputs + msgs.outputs] == [
        ("user", "Hi"), ("assistant", "Hello")]
    with pytest.raises(BadMessages):
        extract({"gen_ai.input.messages": [7]}, [])


def test_system_instructions_are_counted_once_where_the_conversation_starts() -> None:
    instructions = json.dumps([{"type": "text", "content": "Be brief."}])
    first = chat_span("c5", [semconv("user", "Hi")], [semconv("assistant", "Hello!")],
                      **{"gen_ai.system_instructions": instructions})
    later = chat_span("c5", [semconv("user", "Hi"), semconv("assistant", "Hello!"),
                             semconv("user", "Bye")], [semconv("assistant", "Bye!")],
                      **{"gen_ai.system_instructions": "{not json"})  # never refuses a span
    mapped = map_request(request(first, later), OtelOptions())
    assert mapped.skipped_messages == {"system": 1} and len(mapped.events) == 4


def test_a_span_without_a_start_time_is_refused_and_the_latest_time_maps() -> None:
    s = chat_span("t-1", [semconv("user", "Hi")], [semconv("assistant", "Hello")])
    s.start_time_unix_nano = 0
    mapped = map_request(request(s), OtelOptions())
    assert mapped.events == [] and mapped.refused[0][0] == "bad_timestamp"
    s.start_time_unix_nano = s.end_time_unix_nano = 2**64 - 1  # fixed64's largest: year 2554
    assert map_request(request(s), OtelOptions()).events[0].event["ts"].startswith("2554-")
