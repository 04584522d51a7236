"""A scripted LLM judge that speaks the OpenAI chat-completions protocol, for the judge tests.

No real LLM exists on the machines that run the tests, so this is a test double, but a real
one in every other way: an HTTP server on a loopback port, real JSON over the wire, real status
codes and headers. It records every request (path, headers, body) so tests can check exactly
what was sent, and how often.

The rating: ``[rate=N]`` in the reply text, else a hash of the reply text placed on the
rubric's scale (read from the system prompt's "integer LO to HI"). Every answer reports
``usage.total_tokens = tokens`` (100 unless set). Scripted trouble, by words in the reply text:
``[broken]`` answers prose, never JSON; ``[broken-once]`` answers prose the first time the
reply is seen, then JSON; ``[refuse]`` answers 400; ``[busy]`` answers 429 with
``Retry-After: retry_after`` the first two times; ``[slow]`` sleeps ``slow_s`` first.
``require_key`` makes every request without ``Authorization: Bearer <key>`` a 401.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.probe.scripted_bot import _handler, _Server

_SCALE = re.compile(r"integer (\d+) to (\d+)")
_REPLY = re.compile(r"<reply>\n(.*)\n</reply>", re.S)
_RATE = re.compile(r"\[rate=(\d+)\]")


def scripted_rating(reply: str, lo: int, hi: int) -> int:
    forced = _RATE.search(reply)
    if forced:
        return int(forced.group(1))
    return lo + hashlib.sha256(reply.encode()).digest()[0] % (hi - lo + 1)


class ScriptedJudge:
    """``with ScriptedJudge() as judge: judge.url`` is ``http://127.0.0.1:PORT/v1``; ``port``
    binds a given port (a test that starts the judge where a dead endpoint was)."""

    def __init__(self, port: int = 0, require_key: str | None = None, slow_s: float = 0.5,
                 tokens: int = 100, retry_after: str = "0",
                 script: Callable[[str, str], int] | None = None, quote: bool = False) -> None:
        self.script = script  # (system prompt, reply) -> rating, instead of the hash
        self.quote = quote  # the reasoning quotes the reply, as real judges' often do
        self.require_key = require_key
        self.slow_s = slow_s
        self.tokens = tokens
        self.retry_after = retry_after
        self.requests: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.seen: Counter[str] = Counter()
        self.in_flight = self.max_in_flight = 0  # the scripted bot's handler counts them
        self.lock = threading.Lock()
        self.server = _Server(("127.0.0.1", port), _handler(self))  # type: ignore[arg-type]  # same interface
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedJudge:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def bodies(self) -> str:
        """Every request body as one JSON text (for "was X ever sent?")."""
        with self.lock:
            return json.dumps([r["body"] for r in self.requests], ensure_ascii=False)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]
               ) -> tuple[int, dict[str, str], dict[str, Any]]:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            self.times.append(time.monotonic())
        if self.require_key and headers.get("authorization") != f"Bearer {self.require_key}":
            return 401, {}, {"error": {"message": "invalid api key"}}
        if path != "/v1/chat/completions":
            return 404, {}, {"error": {"message": "not found"}}
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        lo, hi = (int(x) for x in _SCALE.search(system).groups())  # type: ignore[union-attr]
        reply = _REPLY.search(user).group(1)  # type: ignore[union-attr]
        with self.lock:
            self.seen[reply] += 1
            seen = self.seen[reply]
        if "[refuse]" in reply:
            return 400, {}, {"error": {"message": "this request is not accepted"}}
        if "[busy]" in reply and seen <= 2:
            return 429, {"Retry-After": self.retry_after}, {"error": {"message": "slow down"}}
        if "[slow]" in reply:
            time.sleep(self.slow_s)
        rating = self.script(system, reply) if self.script else scripted_rating(reply, lo, hi)
        reasoning = f"The reply says: {reply}" if self.quote else f"Scripted: rated {rating}."
        content = json.dumps({"reasoning": reasoning, "score": rating})
        if "[broken]" in reply or ("[broken-once]" in reply and seen == 1):
            content = f"I would rate this reply a {rating} because it is fine."
        return 200, {}, {"object": "chat.completion", "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": content}}],
                         "usage": {"total_tokens": self.tokens}}
