"""The probe's HTTP client: one chat turn per call, to an OpenAI-compatible chat-completions
endpoint (``POST {URL}/chat/completions`` with ``model`` and ``messages``; the reply is
``choices[0].message.content``) or a plain JSON endpoint with a field mapping (:class:`FieldMap`).

Retries with exponential backoff and jitter on 429, 5xx, timeouts and connection errors,
honouring ``Retry-After``; other 4xx fail at once. Requests pass a rate limiter shared by all
scenarios. The API key travels only in the auth header: it is never logged, and any error text
that could echo it is scrubbed.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from pydantic import SecretStr

from pipeline.errors import ChatmonError, MissingExtraError

log = logging.getLogger(__name__)
Message = dict[str, str]
RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


class ProbeRequestError(ChatmonError):
    """One chat turn could not be had from the endpoint (after retries where they apply).
    ``transient``: the endpoint was unreachable, timed out or answered 429/5xx every time (worth
    trying again later), as opposed to refusing the request (other 4xx) or a malformed answer."""

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Where a plain JSON endpoint (``--api json``) takes and gives things, as dotted paths
    (``output.text``, ``choices.0.message.content``). An unset request field is not sent.

    ``messages``: the conversation so far as ``[{"role", "content"}]``; ``message``: only the
    newest user message; ``system``: the system prompt (otherwise it leads ``messages``);
    ``model``; ``conversation``: the conversation id, for bots that keep history themselves;
    ``reply``: where the reply text is in the response.
    """

    messages: str | None = "messages"
    message: str | None = None
    system: str | None = None
    model: str | None = "model"
    conversation: str | None = None
    reply: str = "reply"

    @classmethod
    def parse(cls, pairs: list[str]) -> FieldMap:
        """``KEY=PATH`` pairs (an empty PATH unsets a request field) over the defaults."""
        values: dict[str, str | None] = {}
        for pair in pairs:
            key, sep, path = pair.partition("=")
            if not sep or key not in cls.__dataclass_fields__:
                known = ", ".join(cls.__dataclass_fields__)
                raise ValueError(f"--field takes KEY=PATH with KEY one of {known}; got {pair!r}")
            values[key] = path.strip() or None
        out = cls(**values)  # type: ignore[arg-type]
        if not out.reply:
            raise ValueError("--field reply=PATH cannot be empty: it says where the reply is")
        if not out.messages and not out.message:
            raise ValueError("the request needs --field messages=PATH or --field message=PATH")
        return out


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    model: str
    api: Literal["openai", "json"] = "openai"
    fields: FieldMap = field(default_factory=FieldMap)
    system_prompt: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    auth_header: str = "Authorization"
    # More body fields for the openai API (``seed``, ``response_format``); None values are not sent.
    extra: tuple[tuple[str, Any], ...] = ()

    @property
    def post_url(self) -> str:
        return self.url.rstrip("/") + "/chat/completions" if self.api == "openai" else self.url

    def body(self, messages: list[Message], conversation_id: str) -> dict[str, Any]:
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        if self.api == "openai":
            out: dict[str, Any] = {"model": self.model, "messages": system + messages}
            if self.temperature is not None:
                out["temperature"] = self.temperature
            if self.max_tokens is not None:
                out["max_tokens"] = self.max_tokens
            out.update((k, v) for k, v in self.extra if v is not None)
            return out
        f = self.fields
        out = {}
        if f.messages:
            _put(out, f.messages, (system if not f.system else []) + messages)
        for path, value in ((f.message, messages[-1]["content"]), (f.model, self.model),
                            (f.system, self.system_prompt), (f.conversation, conversation_id)):
            if path and value is not None:
                _put(out, path, value)
        return out

    def reply(self, data: Any) -> str:
        path = "choices.0.message.content" if self.api == "openai" else self.fields.reply
        value = _get(data, path)
        if not isinstance(value, str):
            raise ProbeRequestError(f"the response has no text at {path}")
        return value


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: int = 3
    backoff_s: float = 1.0  # first wait; doubles per retry, with jitter
    max_wait_s: float = 60.0  # cap on one wait, Retry-After included
    timeout_s: float = 60.0


class RateLimiter:
    """At most ``rate`` requests per second across all scenarios (None: no limit)."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)


@dataclass(frozen=True, slots=True)
class Completion:
    """A reply and the tokens the server says it used (``usage.total_tokens``; None: not said)."""

    text: str
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class _Attempt:
    """One request's outcome: the reply ``text``, or an ``error`` and how long to ``wait``
    before retrying (None: do not retry; -1: the usual backoff)."""

    text: str | None = None
    error: str = ""
    wait: float | None = None
    tokens: int | None = None


@dataclass
class ClientStats:
    requests: int = 0
    retries: int = 0


class ChatClient:
    """Async; one instance per probe run, used inside ``async with``."""

    def __init__(self, endpoint: Endpoint, api_key: SecretStr | None = None,
                 policy: RetryPolicy | None = None, rate: float | None = None,
                 concurrency: int = 4, user_agent: str = "chatmon-probe") -> None:
        try:
            import httpx
        except ImportError as exc:
            raise MissingExtraError("httpx", "probe") from exc
        self.endpoint = endpoint
        self.policy = policy or RetryPolicy()
        self.limiter = RateLimiter(rate)
        self.stats = ClientStats()
        self._key = api_key
        headers = {"Accept": "application/json", "User-Agent": user_agent}
        if api_key is not None and api_key.get_secret_value():
            secret = api_key.get_secret_value()
            bearer = endpoint.auth_header.lower() == "authorization"
            headers[endpoint.auth_header] = f"Bearer {secret}" if bearer else secret
        self._http = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(self.policy.timeout_s),
            limits=httpx.Limits(max_connections=max(1, concurrency)), follow_redirects=False)

    async def __aenter__(self) -> ChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.aclose()

    async def reply(self, messages: list[Message], conversation_id: str) -> str:
        """The bot's answer to ``messages`` (the conversation so far, newest user turn last)."""
        return (await self.complete(messages, conversation_id)).text

    async def complete(self, messages: list[Message], conversation_id: str = "") -> Completion:
        """``reply`` with the tokens used, as the server reports them."""
        body = self.endpoint.body(messages, conversation_id)
        attempt = 0
        while True:
            await self.limiter.wait()
            self.stats.requests += 1
            result = await self._attempt(body)
            if result.text is not None:
                return Completion(result.text, result.tokens)
            if result.wait is None or attempt >= self.policy.retries:
                transient = result.wait is not None
                tries = f" (after {attempt + 1} attempts)" if transient else ""
                raise ProbeRequestError(self._scrub(f"{result.error}{tries}"), transient)
            attempt += 1
            self.stats.retries += 1
            log.debug("probe request failed (%s); retry %d", result.error, attempt)
            await asyncio.sleep(result.wait if result.wait >= 0 else self._backoff(attempt))

    async def _attempt(self, body: dict[str, Any]) -> _Attempt:
        import httpx

        try:
            resp = await self._http.post(self.endpoint.post_url, json=body)
        except httpx.TimeoutException:
            return _Attempt(error=f"no answer within {self.policy.timeout_s:g} s", wait=-1.0)
        except httpx.TransportError as exc:
            return _Attempt(error=f"cannot reach the endpoint: {type(exc).__name__}", wait=-1.0)
        status = f"HTTP {resp.status_code} {resp.reason_phrase}".strip()
        if resp.status_code in RETRY_STATUS:
            return _Attempt(error=status, wait=self._retry_after(resp))
        if resp.status_code >= 400:
            return _Attempt(error=status)
        try:
            data = resp.json()
            return _Attempt(text=self.endpoint.reply(data), tokens=_usage(data))
        except ValueError:
            return _Attempt(error="the response is not JSON")
        except ProbeRequestError as exc:
            return _Attempt(error=str(exc))

    def _retry_after(self, resp: Any) -> float:
        """Seconds the server asked us to wait (delta-seconds or an HTTP date), capped; -1 when
        it did not say."""
        value = resp.headers.get("retry-after")
        if value is None:
            return -1.0
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                return -1.0
        return min(max(0.0, seconds), self.policy.max_wait_s)

    def _backoff(self, attempt: int) -> float:
        """Exponential with "equal jitter": half fixed, half random, so parallel scenarios that
        failed together do not retry together."""
        base = min(self.policy.max_wait_s, self.policy.backoff_s * 2 ** (attempt - 1))
        return base / 2 + random.uniform(0, base / 2)

    def _scrub(self, text: str) -> str:
        secret = self._key.get_secret_value() if self._key is not None else ""
        return text.replace(secret, "***") if secret else text


def _usage(data: Any) -> int | None:
    tokens = _get(data, "usage.total_tokens")
    return tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else None


def _put(obj: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        obj = obj.setdefault(part, {})
        if not isinstance(obj, dict):
            raise ValueError(f"field path {path!r} collides with another field")
    obj[parts[-1]] = value


def _get(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        elif isinstance(data, dict) and part in data:
            data = data[part]
        else:
            return None
    return data
