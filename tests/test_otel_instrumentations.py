"""The official instrumentations end to end: the ``openai`` client, instrumented by
``opentelemetry-instrumentation-openai-v2`` (GenAI conventions) or
``openinference-instrumentation-openai`` (OpenInference), talks to a local chat server that plays
the bot; the SDK's OTLP/HTTP exporter sends the spans to a real ``chatmon serve``, which stores
the conversation as it stores the same dialog sent as chatmon events to ``/v1/turns``.

``chatmon serve`` and the bot run in this process; the instrumented client runs in a process of
its own (tests/otel_client.py) with ``.venv/otel-clients`` on ``PYTHONPATH``, where ``make test``
installs the pinned client packages: ``openai`` brings ``httpx2``, which would change starlette's
TestClient for every other test if it were importable here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from pydantic import SecretStr
from sqlalchemy import create_engine, text

from pipeline.embedded.serve import create_app
from pipeline.metrics import OTEL_SPANS
from tests.test_serve_isolation import live_server

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = ROOT / ".venv" / "otel-clients"
CLIENT = ROOT / "tests" / "otel_client.py"
if not (CLIENTS / ".installed").exists():
    pytest.skip(f"the instrumented openai client's packages are not in {CLIENTS}: `make test` "
                "installs them (pins in tests/otel-clients.txt)", allow_module_level=True)

TOKEN = "instrumented"
EMAIL = "sam.okafor@example.net"
DIALOG = {"system": "You are Acme's support bot.",
          "users": [f"I forgot my password, I'm {EMAIL}", "Thanks!"]}
MODEL = "bot-llm-2026-11"


def answer(last: str) -> str:
    return "Sorry about the wait, I've sent a reset link." if "password" in last \
        else "Anything else I can do?"


async def completions(request: Any) -> Any:
    """The bot: an OpenAI-compatible chat completion that answers the last user message."""
    from starlette.responses import JSONResponse

    body = await request.json()
    return JSONResponse({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_795_000_000,
        "model": MODEL, "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": answer(body["messages"][-1]["content"])}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 8, "total_tokens": 17}})


@pytest.fixture
def endpoints(make_processor, sqlite_url: str) -> Iterator[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    from starlette.applications import Starlette
    from starlette.routing import Route

    proc = make_processor(sqlite_url, serve_token=SecretStr(TOKEN))
    bot = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    with live_server(create_app(proc.settings, proc)) as chatmon, live_server(bot) as bot_url:
        yield chatmon, f"{bot_url}/v1", sqlite_url


def run_client(instrumentation: str, chatmon: str, bot: str, conversation: str,
               **env: str) -> None:
    """The instrumented application, in its own process, holding DIALOG with the bot."""
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith("OTEL_") and k != "PYTHONPATH"}
    environ.update(env, PYTHONPATH=str(CLIENTS))
    # -P: the script's folder (tests/) is not put on sys.path, so nothing there shadows a module.
    done = subprocess.run(
        [sys.executable, "-P", str(CLIENT), instrumentation, "--chatmon", chatmon, "--bot", bot,
         "--token", TOKEN, "--conversation", conversation, "--dialog", json.dumps(DIALOG)],
        env=environ, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]


def send_as_events(chatmon: str, conversation: str) -> None:
    """DIALOG as an application would send it without OpenTelemetry: one chatmon event per turn
    (the JSON lines format), to ``/v1/turns``."""
    turns: list[tuple[str, str]] = []
    for user in DIALOG["users"]:
        turns += [("user", user), ("assistant", answer(user))]
    events = [{"conversation_id": conversation, "turn": i, "role": role, "text": said,
               "ts": f"2026-11-20T10:00:{i:02d}Z", "bot_id": "support-bot",
               **({"model": MODEL} if role == "assistant" else {})}
              for i, (role, said) in enumerate(turns)]
    sent = httpx.post(f"{chatmon}/v1/turns", json=events, timeout=60,
                      headers={"Authorization": f"Bearer {TOKEN}"})
    assert sent.status_code == 200, sent.text


def stored(url: str, conversation: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The conversation's turns and findings, without what differs between two deliveries
    (conversation id, times, run and row ids, transport metadata)."""
    engine = create_engine(url)
    with engine.connect() as conn:
        turns = conn.execute(text(
            "select turn, role, text_redacted, bot_id, model, tenant from turns "
            "where conversation_id = :c order by turn"), {"c": conversation}).all()
        findings = conn.execute(text(
            "select turn, role, detector, detector_version, label, score, flagged, span_start, "
            "span_end, excerpt from findings where conversation_id = :c "
            "order by turn, label, span_start"), {"c": conversation}).all()
    engine.dispose()
    return [tuple(r) for r in turns], [tuple(r) for r in findings]


def conversations(url: str) -> set[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        out = set(conn.execute(text("select distinct conversation_id from turns")).scalars())
    engine.dispose()
    return out


def check_conversation(chatmon: str, url: str, conversation: str) -> None:
    """Stored as the same dialog sent as chatmon events is: turns, redaction and findings."""
    send_as_events(chatmon, f"{conversation}-jsonl")
    turns, findings = stored(url, conversation)
    assert [(t[0], t[1]) for t in turns] == [(0, "user"), (1, "assistant"), (2, "user"),
                                             (3, "assistant")]
    assert {t[3] for t in turns} == {"support-bot"}
    assert [t[4] for t in turns if t[1] == "assistant"] == [MODEL] * 2
    assert EMAIL not in turns[0][2] and "password" in turns[0][2]  # redacted before storing
    assert turns[3][2] == "Anything else I can do?"
    assert any(f[4] == "pii.email_address" and f[0] == 0 for f in findings), findings
    assert (turns, findings) == stored(url, f"{conversation}-jsonl")


def no_content() -> float:
    """serve's count of capture-off spans (it runs in this process; the counter is
    process-wide, so the test reads a difference)."""
    return REGISTRY.get_sample_value(OTEL_SPANS, {"outcome": "no_content"}) or 0.0


def test_opentelemetry_openai_v2_instrumentation(endpoints) -> None:  # type: ignore[no-untyped-def]
    chatmon, bot, url = endpoints
    opt_in = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
    run_client("openai-v2", chatmon, bot, "v2-conv", **opt_in,
               OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="span_only")
    check_conversation(chatmon, url, "v2-conv")
    # Capture off (the instrumentation's default): the calls are counted, no turn stored.
    before = no_content()
    run_client("openai-v2", chatmon, bot, "v2-off", **opt_in)
    assert conversations(url) == {"v2-conv", "v2-conv-jsonl"}
    assert no_content() - before == 2


def test_openinference_openai_instrumentation(endpoints) -> None:  # type: ignore[no-untyped-def]
    chatmon, bot, url = endpoints
    run_client("openinference", chatmon, bot, "oi-conv")  # OpenInference's session.id
    check_conversation(chatmon, url, "oi-conv")
