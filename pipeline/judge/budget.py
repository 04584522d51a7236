"""The judge's token budget per UTC day, kept in the store (``judge_usage``) so that it holds
across restarts and across judge processes sharing the store. Requests per minute are spaced
by the probe client's rate limiter.

A request is sent only when the day's recorded tokens, plus what requests in flight reserved,
plus its own reservation fit the budget. A reservation is the prompt at 4 characters a token
plus ``max_tokens`` for the answer, so the budget is not passed while the endpoint keeps to
``max_tokens`` and counts about as many tokens as characters / 4; the tokens the endpoint
reports (``usage.total_tokens``) are what is recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from sqlalchemy import Engine

from pipeline.judge.prompt import Message
from pipeline.judge.store import add_usage, today, tokens_used

CHARS_PER_TOKEN = 4


def prompt_tokens(sent: Sequence[Message]) -> int:
    return sum(len(m["content"]) for m in sent) // CHARS_PER_TOKEN + 4 * len(sent)


def reservation(sent: Sequence[Message], max_tokens: int) -> int:
    return prompt_tokens(sent) + max_tokens


class TokenBudget:
    def __init__(self, engine: Engine, model: str, per_day: int | None) -> None:
        self.engine = engine
        self.model = model
        self.per_day = per_day
        self.reserved = 0
        self._lock = asyncio.Lock()

    async def reserve(self, tokens: int) -> bool:
        """Reserve ``tokens`` for one request; False when the day's budget cannot take it."""
        async with self._lock:
            if self.per_day is not None:
                used = await asyncio.to_thread(tokens_used, self.engine, today(), self.model)
                if used + self.reserved + tokens > self.per_day:
                    return False
            self.reserved += tokens
            return True

    async def settle(self, reserved: int, spent: int, requests: int = 1) -> None:
        """Release a reservation and record what the request really cost (0 when it failed
        before the endpoint answered)."""
        self.reserved -= reserved
        if requests or spent:
            await asyncio.to_thread(add_usage, self.engine, today(), self.model, requests, spent)
