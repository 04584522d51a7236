"""The probe's HTTP client against a real HTTP server (the scripted bot): the chat-completions
request, the key, retries on 429/5xx with Retry-After and backoff, no retry on other 4xx,
timeouts and unreachable endpoints, the rate limit, and the plain JSON API's field mapping."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from pipeline.probe.client import (
    ChatClient,
    Endpoint,
    FieldMap,
    ProbeRequestError,
    RetryPolicy,
    _get,
)
from tests.probe.scripted_bot import TEMPLATE, ScriptedBot, warm_reply

FAST = RetryPolicy(retries=3, backoff_s=0.01, timeout_s=5.0)


@pytest.fixture
def bot() -> Iterator[ScriptedBot]:
    with ScriptedBot(slow_s=0.5) as b:
        yield b


def ask(endpoint: Endpoint, text: str, policy: RetryPolicy = FAST, key: str | None = None,
        rate: float | None = None) -> tuple[str, ChatClient]:
    async def go() -> tuple[str, ChatClient]:
        async with ChatClient(endpoint, SecretStr(key) if key else None, policy, rate) as c:
            return await c.reply([{"role": "user", "content": text}], "conv-1"), c
    return asyncio.run(go())


def test_chat_completions_request_and_reply(bot: ScriptedBot) -> None:
    ep = Endpoint(bot.url, "templated-1", system_prompt="You are Acme's helper.",
                  temperature=0.2, max_tokens=64)
    text, client = ask(ep, "Where is my parcel?", key="sk-test")
    assert text.startswith(TEMPLATE)
    req = bot.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["body"] == {"model": "templated-1", "temperature": 0.2, "max_tokens": 64,
                           "messages": [{"role": "system", "content": "You are Acme's helper."},
                                        {"role": "user", "content": "Where is my parcel?"}]}
    assert req["headers"]["authorization"] == "Bearer sk-test"
    assert client.stats.requests == 1 and client.stats.retries == 0


def test_key_in_another_header(bot: ScriptedBot) -> None:
    ep = Endpoint(bot.url, "warm-1", auth_header="x-api-key")
    ask(ep, "Hello there, my order is late.", key="k-123")
    headers = bot.requests[-1]["headers"]
    assert headers["x-api-key"] == "k-123" and "authorization" not in headers


@pytest.mark.parametrize("word", ["[flaky429]", "[flaky500]"])
def test_retries_429_and_5xx_then_succeeds(bot: ScriptedBot, word: str) -> None:
    text, client = ask(Endpoint(bot.url, "warm-1"), f"My parcel is late {word}")
    assert text == warm_reply(f"My parcel is late {word}")
    assert client.stats.requests == 3 and client.stats.retries == 2  # failed twice, then 200


def test_gives_up_after_the_retries_and_says_why(bot: ScriptedBot) -> None:
    policy = RetryPolicy(retries=1, backoff_s=0.01, timeout_s=5.0)
    with pytest.raises(ProbeRequestError, match=r"HTTP 500 Internal Server Error \(after 2 "
                                                r"attempts\)"):
        ask(Endpoint(bot.url, "warm-1"), "Broken [flaky500]", policy)


def test_other_client_errors_are_not_retried(bot: ScriptedBot) -> None:
    with pytest.raises(ProbeRequestError, match=r"^HTTP 400 Bad Request$"):
        ask(Endpoint(bot.url, "warm-1"), "Bad message [fail400]")
    assert len(bot.requests) == 1
    with pytest.raises(ProbeRequestError, match="HTTP 404"):
        ask(Endpoint(bot.url, "no-such-model"), "Hello")


def test_wrong_key_fails_and_the_error_never_holds_the_key() -> None:
    with ScriptedBot(require_key="right-key") as b, pytest.raises(ProbeRequestError) as err:
        ask(Endpoint(b.url, "warm-1"), "Hi", key="wrong-key-secret")
    assert "HTTP 401" in str(err.value) and "wrong-key-secret" not in str(err.value)


def test_timeout_is_retried_then_reported(bot: ScriptedBot) -> None:
    policy = RetryPolicy(retries=1, backoff_s=0.01, timeout_s=0.1)
    with pytest.raises(ProbeRequestError, match=r"no answer within 0.1 s \(after 2 attempts\)"):
        ask(Endpoint(bot.url, "warm-1"), "Anyone there? [slow]", policy)
    assert len(bot.requests) == 2


def test_unreachable_endpoint_is_retried_then_reported() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    policy = RetryPolicy(retries=2, backoff_s=0.01, timeout_s=2.0)
    with pytest.raises(ProbeRequestError, match=r"cannot reach the endpoint: ConnectError "
                                                r"\(after 3 attempts\)"):
        ask(Endpoint(f"http://127.0.0.1:{port}/v1", "warm-1"), "Hi", policy)


def test_rate_limit_spaces_requests_out(bot: ScriptedBot) -> None:
    ep = Endpoint(bot.url, "warm-1")

    async def many(rate: float | None) -> float:
        async with ChatClient(ep, None, FAST, rate, concurrency=8) as c:
            t0 = time.perf_counter()
            await asyncio.gather(*(c.reply([{"role": "user", "content": f"hi {i}"}], f"c{i}")
                                   for i in range(6)))
            return time.perf_counter() - t0

    assert asyncio.run(many(10.0)) >= 0.5 - 0.02  # 6 requests at 10/s: the last after 0.5 s
    assert asyncio.run(many(None)) < 0.5


def test_retry_after_is_honoured(bot: ScriptedBot) -> None:
    """The server's Retry-After (0 s here) wins over the backoff (10 s here)."""
    slow_backoff = RetryPolicy(retries=3, backoff_s=10.0, timeout_s=5.0)
    t0 = time.perf_counter()
    ask(Endpoint(bot.url, "warm-1"), "Late again [flaky429]", slow_backoff)
    assert time.perf_counter() - t0 < 3.0


def test_plain_json_api_with_a_field_mapping(bot: ScriptedBot) -> None:
    fields = FieldMap.parse(["messages=input.history", "message=input.text",
                             "conversation=session", "model=", "reply=output.text",
                             "system=input.system"])
    ep = Endpoint(bot.json_url, "warm-1", api="json", fields=fields, system_prompt="Be kind.")
    text, _ = ask(ep, "My dog died and I need to cancel the food delivery.")
    assert text == warm_reply("My dog died and I need to cancel the food delivery.")
    req = bot.requests[-1]
    assert req["path"] == "/bot"
    assert req["body"] == {"input": {
        "history": [{"role": "user", "content": "My dog died and I need to cancel the food "
                     "delivery."}],
        "text": "My dog died and I need to cancel the food delivery.", "system": "Be kind."},
        "session": "conv-1"}


def test_json_api_reply_missing_is_a_clear_error(bot: ScriptedBot) -> None:
    ep = Endpoint(bot.json_url, "warm-1", api="json",
                  fields=FieldMap.parse(["message=input.text", "reply=answer"]))
    with pytest.raises(ProbeRequestError, match="the response has no text at answer"):
        ask(ep, "Hi")


@pytest.mark.parametrize(("pairs", "error"), [
    (["colour=red"], "KEY one of messages, message, system, model, conversation, reply"),
    (["reply"], "KEY=PATH"),
    (["reply="], "cannot be empty"),
    (["messages=", "message="], "needs --field messages=PATH or --field message=PATH"),
])
def test_field_map_errors(pairs: list[str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        FieldMap.parse(pairs)


@pytest.mark.parametrize(("data", "path", "value"), [
    ({"choices": [{"message": {"content": "hi"}}]}, "choices.0.message.content", "hi"),
    ({"choices": []}, "choices.0.message.content", None),
    ({"output": {"text": 3}}, "output.text", 3),
    ({"output": "x"}, "output.text", None),
    ([{"a": 1}], "0.a", 1),
])
def test_dotted_paths(data: Any, path: str, value: Any) -> None:
    assert _get(data, path) == value
