"""Judging: stored, redacted replies in, ``judge.<criterion>`` findings out.

For each candidate reply and rubric: a finding already stored (same rubric version and judge
model) is skipped; a cached answer to the same redacted messages is stored without a request;
otherwise the endpoint is asked (temperature 0, a seed, the judge model pinned), within the
token budget. An answer that is not the JSON asked for is retried once, told why; a second bad
answer, or a request the endpoint refuses (4xx), is a failure: dead-lettered with its reason
(``judge_failed``), never guessed. An endpoint that stays unreachable after the client's
retries, or a spent budget, stops the judging: what was not judged stays for the next run (or
the next try of a long-running mode), which picks it up.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr
from sqlalchemy import Engine

from pipeline.judge import prompt
from pipeline.judge import store as js
from pipeline.judge.agreement import agrees, on_scale
from pipeline.judge.budget import TokenBudget, prompt_tokens, reservation
from pipeline.judge.prompt import AnswerError, Message, Verdict
from pipeline.judge.rubric import Rubric
from pipeline.judge.select import Candidate, Rule
from pipeline.metrics import PipelineMetrics
from pipeline.policy.engine import Policy
from pipeline.probe.client import ChatClient, Endpoint, ProbeRequestError, RetryPolicy
from pipeline.scoring.redaction import redact
from pipeline.store.sink import Sink

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeOptions:
    sample_rate: float = 0.1
    rules: tuple[Rule, ...] = ()
    requests_per_minute: float | None = None
    tokens_per_day: int | None = None
    concurrency: int = 4
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    batch: int = 50  # assistant turns read from the store at a time


class _Stop(Exception):
    """No more requests now: the endpoint is unavailable or the budget is spent."""


class _Failed(Exception):
    """This reply could not be rated: dead-lettered."""


@dataclass
class JudgeReport:
    model: str
    rubrics: list[str]
    turns_read: int = 0
    selected: Counter[str] = field(default_factory=Counter)  # turns, by why (sample, a rule)
    turns_selected: int = 0
    from_endpoint: Counter[str] = field(default_factory=Counter)  # findings, by label
    from_cache: Counter[str] = field(default_factory=Counter)
    already_stored: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    not_judged: int = 0  # (turn, rubric) pairs left for later
    requests: int = 0
    retries: int = 0
    tokens: int = 0
    stopped: str | None = None

    def read(self, turns: int, candidates: Sequence[Candidate]) -> None:
        """Count a batch of assistant turns read and the candidates picked from it."""
        self.turns_read += turns
        self.turns_selected += len(candidates)
        for c in candidates:
            self.selected.update(c.why)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "rubrics": self.rubrics, "turns_read": self.turns_read,
                "turns_selected": self.turns_selected, "selected_by": dict(self.selected),
                "judged": dict(sorted(self.from_endpoint.items())),
                "from_cache": dict(sorted(self.from_cache.items())),
                "already_stored": self.already_stored, "failed": dict(sorted(self.failed.items())),
                "not_judged": self.not_judged, "requests": self.requests,
                "retries": self.retries, "tokens": self.tokens, "stopped": self.stopped}


class Judge:
    """One judge model over some rubrics; ``judge(candidates)`` may be called many times."""

    def __init__(self, engine: Engine, endpoint: Endpoint, rubrics: Sequence[Rubric],
                 options: JudgeOptions, policy: Policy, api_key: SecretStr | None = None,
                 run_id: str | None = None, metrics: PipelineMetrics | None = None) -> None:
        self.engine = engine
        self.sink = Sink(engine)
        self.endpoint = endpoint
        self.model = endpoint.model
        self.rubrics = list(rubrics)
        self.options = options
        self.policy = policy
        self.api_key = api_key
        self.run_id = run_id
        self.metrics = metrics
        self.budget = TokenBudget(engine, self.model, options.tokens_per_day)
        self.report = JudgeReport(self.model, [r.key for r in self.rubrics])

    def judge(self, candidates: Sequence[Candidate]) -> JudgeReport:
        """Judge every (candidate, rubric) not stored yet; returns the running report (its
        ``stopped`` says why some were left)."""
        self.report.stopped = None
        asyncio.run(self._judge(candidates))
        return self.report

    async def _judge(self, candidates: Sequence[Candidate]) -> None:
        # asyncio locks belong to one event loop: a fresh budget for each asyncio.run
        self.budget = TokenBudget(self.engine, self.model, self.options.tokens_per_day)
        todo = [(c, r) for c in candidates for r in self.rubrics]
        done = await asyncio.to_thread(
            js.existing, self.engine, [js.finding_id(c.turn_id, r, self.model) for c, r in todo])
        todo = [(c, r) for c, r in todo if js.finding_id(c.turn_id, r, self.model) not in done]
        self.report.already_stored += len(candidates) * len(self.rubrics) - len(todo)
        sent = [prompt.messages(r, c.answers, c.text) for c, r in todo]
        keys = [js.cache_key(r, self.model, s) for (c, r), s in zip(todo, sent, strict=True)]
        hits = await asyncio.to_thread(js.cached, self.engine, keys)
        asks: dict[str, list[tuple[Candidate, Rubric, list[Message]]]] = {}
        for (c, r), s, key in zip(todo, sent, keys, strict=True):
            if key in hits:
                await asyncio.to_thread(self._store, c, r, hits[key], None)
            else:  # the same messages twice in one batch are asked once
                asks.setdefault(key, []).append((c, r, s))
        if not asks:
            return
        gate = asyncio.Semaphore(max(1, self.options.concurrency))
        rate = self.options.requests_per_minute
        async with ChatClient(self.endpoint, self.api_key, self.options.retry,
                              rate / 60.0 if rate else None, self.options.concurrency,
                              user_agent="chatmon-judge") as client:
            await asyncio.gather(*(self._one(client, gate, key, group)
                                   for key, group in asks.items()))
            self.report.requests += client.stats.requests
            self.report.retries += client.stats.retries

    async def _one(self, client: ChatClient, gate: asyncio.Semaphore, key: str,
                   group: list[tuple[Candidate, Rubric, list[Message]]]) -> None:
        """Ask for one set of messages; store the verdict for every reply that sent them."""
        _, r, sent = group[0]
        async with gate:
            if self.report.stopped:
                self.report.not_judged += len(group)
                return
            try:
                verdict, tokens = await self._ask(client, r, sent)
            except _Stop as exc:
                self.report.stopped = self.report.stopped or str(exc)
                self.report.not_judged += len(group)
                return
            except _Failed as exc:
                self.report.failed[r.label] += len(group)
                rows = [js.dead_letter_row(c, r, self.model, str(exc), self.run_id)
                        for c, _, _ in group]
                await asyncio.to_thread(self.sink.write, (), (), rows)
                return
        cache = js.cache_row(key, r, self.model, verdict, tokens, group[0][0].conversation_id)
        for i, (c, _, _) in enumerate(group):
            await asyncio.to_thread(self._store, c, r, verdict, cache if i == 0 else None)

    async def _ask(self, client: ChatClient, r: Rubric, sent: list[Message]
                   ) -> tuple[Verdict, int]:
        """The verdict and the tokens it cost (both attempts)."""
        spent = 0
        for attempt in (1, 2):
            want = reservation(sent, self.endpoint.max_tokens or 0)
            if not await self.budget.reserve(want):
                self._count("over_budget")
                raise _Stop(f"token budget of {self.options.tokens_per_day} for "
                            f"{js.today()} reached")
            try:
                answer = await client.complete(sent)
            except ProbeRequestError as exc:
                await self.budget.settle(want, 0)
                self._count("unavailable" if exc.transient else "refused")
                if exc.transient:
                    raise _Stop(f"endpoint unavailable: {exc}") from None
                raise _Failed(f"the endpoint refused the request: {exc}") from None
            tokens = answer.tokens or prompt_tokens(sent) + len(answer.text) // 4
            spent += tokens
            await self.budget.settle(want, tokens)
            self.report.tokens += tokens
            try:
                verdict = prompt.parse_answer(answer.text, r)
            except AnswerError as exc:
                self._count("unusable", tokens)
                if attempt == 2:
                    raise _Failed(f"an unusable answer twice: {exc}") from None
                sent = prompt.retry_messages(sent, answer.text, str(exc))
                continue
            self._count("ok", tokens)
            # The reason is the model's text: it may invent a number or address; the safety net
            # masks those like any stored text.
            return Verdict(verdict.rating, redact(verdict.reason, [])[0]), spent
        raise AssertionError("unreachable")

    def _count(self, outcome: str, tokens: int = 0) -> None:
        if self.metrics is not None:
            self.metrics.judge_request(self.model, outcome, tokens)

    def _store(self, c: Candidate, r: Rubric, verdict: Verdict,
               cache: dict[str, Any] | None) -> None:
        if cache is not None:
            js.put_cache(self.engine, [cache])
        row = js.finding_row(c, r, self.model, verdict, self.policy, self.run_id)
        self.sink.write((), [row], ())
        (self.report.from_endpoint if cache is not None else self.report.from_cache)[
            r.label] += 1
        if self.metrics is not None:
            agree = None
            other = c.classifier(r.compare_to) if r.compare_to else None
            if other is not None:  # on the rubric's scale, as chatmon review agreement
                scale = (r.scale.min, r.scale.max)
                agree = agrees(scale, verdict.rating, on_scale(scale, other.score, other.level))
            self.metrics.judged(r.label, "endpoint" if cache else "cache", c.bot_id, agree)
