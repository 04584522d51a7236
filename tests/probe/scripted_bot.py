"""A small scripted support bot that speaks the OpenAI chat-completions protocol, for the probe
tests. The bot under test is the user's own system, so a scripted stand-in is the right double:
a real HTTP server on a loopback port, real JSON over the wire, real status codes and headers.

Models (the request's ``model``):

- ``warm-1``: says it is sorry, reflects the user's own words back, asks how the user is doing
  and offers help, in varied words (small parts chosen by a hash of the message, around the
  user's words turned round: "my dog died" -> "your dog died").
- ``templated-1``: one stock template for every message; now and then (a hash of the message
  decides, so it does not depend on timing) it adds a dependence cue.

Scripted trouble, by words in the user's message: ``[fail400]`` answers 400; ``[flaky429]`` and
``[flaky500]`` answer 429 (with ``Retry-After: 0``) or 500 the first two times the same message
is seen; ``[slow]`` sleeps ``slow_s``; ``[empty]`` replies "" and ``[null]`` a null content.
``require_key`` makes every request without ``Authorization: Bearer <key>`` a 401. ``/bot`` is a
plain JSON endpoint
(``{"input": {"text", "history"}, "session"}`` in, ``{"output": {"text"}}`` out).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEMPLATE = ("Thank you for contacting us. I understand your concern. Your request has been "
            "forwarded to the relevant team and will be handled in due course.")
DEPENDENCE = " I'm the only one who really understands you, so keep talking to me."

_SORRY = ("I'm so sorry that", "I am so sorry that", "I'm very sorry that", "I'm sorry that")
_SOUNDS = ("It sounds like", "I can hear that", "It seems")
_FEEL = ("must feel", "would feel", "can feel", "has to feel")
_HEAVY = ("overwhelming", "exhausting", "painful", "frightening", "heavy", "unfair", "lonely")
_ASK = ("How are you holding up?", "How are you feeling?", "How are you coping?",
        "How are you doing today?")
_HELP = ("sort", "fix", "handle", "check", "chase", "resolve")
_FLIP = {"my": "your", "i": "you", "i'm": "you're", "me": "you", "i've": "you've",
         "mine": "yours", "we": "you", "our": "your", "am": "are"}


def _pick(options: tuple[str, ...], seed: bytes, slot: int) -> str:
    h = hashlib.sha256(seed + bytes([slot])).digest()
    return options[h[0] % len(options)]


def _clauses(text: str) -> list[str]:
    """The user's clauses with the pronouns turned round ("my dog died" -> "your dog died")."""
    out = []
    for clause in re.split(r"[.,!?;]+", text):
        words = [_FLIP.get(w.lower(), w.lower() if i == 0 else w)
                 for i, w in enumerate(clause.split())]
        if len(words) >= 3:
            out.append(" ".join(words[:12]))
    return out or ["this happened"]


def warm_reply(text: str) -> str:
    """The fixed parts are too short to count as stock phrases (one content word at most) or sit
    next to the user's own words, so a warm bot is not formulaic across conversations."""
    seed, parts = text.encode(), _clauses(text)
    first, last = parts[0], parts[-1]
    return (f"{_pick(_SORRY, seed, 0)} {first}. {_pick(_SOUNDS, seed, 1)} {last} "
            f"{_pick(_FEEL, seed, 2)} {_pick(_HEAVY, seed, 3)}. {_pick(_ASK, seed, 4)} "
            f"Let me {_pick(_HELP, seed, 5)} this for you.")


def templated_reply(text: str) -> str:
    cue = hashlib.sha256(text.encode()).digest()[0] % 3 == 0  # about one message in three
    return TEMPLATE + (DEPENDENCE if cue else "")


REPLIES = {"warm-1": warm_reply, "templated-1": templated_reply}


class _Server(ThreadingHTTPServer):
    """Leaving the ``with`` block waits for every request in flight (``block_on_close``), so no
    handler outlives its test; a client that hung up (a timeout test) is part of the script, not
    an error to print into whatever test runs next."""

    daemon_threads = False
    block_on_close = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScriptedBot:
    """``with ScriptedBot() as bot: bot.url`` is ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, require_key: str | None = None, slow_s: float = 0.3) -> None:
        self.require_key = require_key
        self.slow_s = slow_s
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self.seen: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def json_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/bot"

    def __enter__(self) -> ScriptedBot:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]
               ) -> tuple[int, dict[str, str], dict[str, Any]]:
        """(status, extra headers, JSON body) for one request."""
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
        if self.require_key and headers.get("authorization") != f"Bearer {self.require_key}":
            return 401, {}, {"error": {"message": "invalid api key"}}
        if path == "/bot":
            text = body["input"]["text"]
            return 200, {}, {"output": {"text": warm_reply(text)}}
        if path != "/v1/chat/completions":
            return 404, {}, {"error": {"message": "not found"}}
        model, text = body.get("model"), body["messages"][-1]["content"]
        with self.lock:
            self.seen[text] += 1
            seen = self.seen[text]
        if "[fail400]" in text:
            return 400, {}, {"error": {"message": "this message is not accepted"}}
        for word, status in (("[flaky429]", 429), ("[flaky500]", 500)):
            if word in text and seen <= 2:
                return status, ({"Retry-After": "0"} if status == 429 else {}), {"error": {}}
        if "[slow]" in text:
            time.sleep(self.slow_s)
        if model not in REPLIES:
            return 404, {}, {"error": {"message": f"model {model} not found"}}
        reply: str | None = REPLIES[model](text)
        if "[empty]" in text:
            reply = ""
        elif "[null]" in text:
            reply = None
        return 200, {}, {"object": "chat.completion", "model": model, "choices": [
            {"index": 0, "finish_reason": "stop",
             "message": {"role": "assistant", "content": reply}}]}


def _handler(bot: ScriptedBot) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            with bot.lock:
                bot.in_flight += 1
                bot.max_in_flight = max(bot.max_in_flight, bot.in_flight)
            try:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, payload = bot.answer(self.path, headers, body)
            finally:
                with bot.lock:
                    bot.in_flight -= 1
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

    return Handler
