"""``chatmon probe``: hold each scenario's conversation with a live bot, then store and score the
turns through the one ``Processor``, exactly like production turns.

Conversations run concurrently (bounded by ``concurrency``) but are stored in suite order, as
soon as every scenario before them is done, so the stateful detectors (repetition) see the same
sequence whatever the timing. A scenario whose request fails (after retries) is reported and
stores nothing; the others go on. Conversation ids are deterministic (suite, version, scenario,
endpoint model, stored model, system prompt, label): probing again with the same ones sends and
stores nothing for scenarios already stored (a resume), a new ``label`` makes new conversations.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import SecretStr
from tqdm import tqdm

from pipeline.ingest.events import RawRecord
from pipeline.probe.client import ChatClient, Endpoint, ProbeRequestError, RetryPolicy
from pipeline.probe.suite import Scenario, Suite
from pipeline.scoring.process import BatchReport, Processor
from pipeline.store.sink import stable_id, turn_id


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    bot_id: str = "probe"
    stored_model: str | None = None  # default: the endpoint's model name
    tenant: str | None = None
    label: str = ""
    concurrency: int = 4
    rate: float | None = None
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    progress: bool = False


@dataclass
class ProbeResult:
    run_id: str
    suite: Suite
    endpoint: Endpoint
    options: ProbeOptions
    report: BatchReport = field(default_factory=BatchReport)
    skipped: list[str] = field(default_factory=list)
    stored: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    requests: int = 0
    retries: int = 0
    seconds: float = 0.0
    interrupted: bool = False

    def as_dict(self) -> dict[str, Any]:
        r, o = self.report, self.options
        return {
            "run_id": self.run_id,
            "suite": self.suite.name,
            "suite_version": self.suite.version,
            "model": self.endpoint.model,
            "stored_model": o.stored_model or self.endpoint.model,
            "bot_id": o.bot_id,
            "label": o.label,
            "scenarios": len(self.suite.scenarios),
            "conversations_stored": len(self.stored),
            "already_stored": len(self.skipped),
            "turns_stored": r.turns_stored,
            "failed": self.failed,
            "requests": self.requests,
            "retries": self.retries,
            "findings_by_label": {lab: n for (_, lab), n in sorted(r.findings.items())},
            "flagged_by_label": {lab: n for (_, lab), n in sorted(r.flagged.items())},
            "dead_letter_reasons": dict(sorted(r.dead_letters.items())),
            "seconds": round(self.seconds, 3),
            "interrupted": self.interrupted,
        }


def conversation_id(suite: Suite, scenario: Scenario, endpoint: Endpoint,
                    options: ProbeOptions) -> str:
    """Readable and deterministic: the scenario id plus a hash of everything that makes the
    conversation a different one."""
    prompt = hashlib.sha256((endpoint.system_prompt or "").encode()).hexdigest()
    digest = stable_id("probe", suite.name, suite.version, scenario.id, endpoint.model,
                       options.stored_model or endpoint.model, prompt, options.label)
    return f"probe-{scenario.id}-{digest[:12]}"


def run_probe(suite: Suite, endpoint: Endpoint, processor: Processor, options: ProbeOptions,
              api_key: SecretStr | None = None, run_id: str | None = None) -> ProbeResult:
    """Hold and store every scenario's conversation. Ctrl-C (SIGINT) stops sending: what was
    already stored stays (``interrupted`` is set), and a second run resumes from there."""
    result = ProbeResult(run_id or str(uuid.uuid4()), suite, endpoint, options)
    t0 = time.perf_counter()
    try:
        asyncio.run(_Probe(result, processor, api_key).run())
    except KeyboardInterrupt:
        result.interrupted = True
    result.seconds = time.perf_counter() - t0
    return result


class _Probe:
    def __init__(self, result: ProbeResult, processor: Processor,
                 api_key: SecretStr | None) -> None:
        self.result = result
        self.proc = processor
        self.api_key = api_key
        s, e, o = result.suite, result.endpoint, result.options
        self.ids = [conversation_id(s, sc, e, o) for sc in s.scenarios]
        self.done: dict[int, list[dict[str, Any]] | None] = {}
        self.next = 0  # the first scenario not yet stored (or skipped)
        self.lock = asyncio.Lock()
        self.prompt_sha = (hashlib.sha256(e.system_prompt.encode()).hexdigest()[:16]
                           if e.system_prompt else None)

    async def run(self) -> None:
        r = self.result
        stored = self.proc.sink.existing_hashes([turn_id(cid, 0) for cid in self.ids])
        todo = [i for i, cid in enumerate(self.ids) if turn_id(cid, 0) not in stored]
        for i, cid in enumerate(self.ids):
            if turn_id(cid, 0) in stored:
                r.skipped.append(r.suite.scenarios[i].id)
                self.done[i] = None
        gate = asyncio.Semaphore(max(1, r.options.concurrency))
        bar = tqdm(total=len(todo), disable=not r.options.progress, unit="scenario",
                   desc=f"probe {r.endpoint.model}", leave=False)
        async with ChatClient(r.endpoint, self.api_key, r.options.policy, r.options.rate,
                              r.options.concurrency) as client:
            await asyncio.gather(*(self._one(client, i, gate, bar) for i in todo))
            r.requests, r.retries = client.stats.requests, client.stats.retries
        await self._flush()
        bar.close()
        order = {sc.id: i for i, sc in enumerate(r.suite.scenarios)}
        r.failed.sort(key=lambda f: order[f["scenario"]])  # suite order, not finishing order

    async def _one(self, client: ChatClient, i: int, gate: asyncio.Semaphore, bar: tqdm) -> None:
        scenario = self.result.suite.scenarios[i]
        async with gate:
            try:
                events = await self._converse(client, scenario, self.ids[i])
            except ProbeRequestError as exc:
                self.result.failed.append({"scenario": scenario.id, "error": str(exc)})
                events = None
        self.done[i] = events
        bar.update(1)
        bar.set_postfix(failed=len(self.result.failed), refresh=False)
        await self._flush()

    async def _converse(self, client: ChatClient, scenario: Scenario, cid: str
                        ) -> list[dict[str, Any]]:
        messages: list[dict[str, str]] = []
        events: list[dict[str, Any]] = []
        for text in scenario.turns:
            events.append(self._event(cid, len(events), "user", text, scenario))
            messages.append({"role": "user", "content": text})
            reply = await client.reply(messages, cid)
            events.append(self._event(cid, len(events), "assistant", reply, scenario))
            messages.append({"role": "assistant", "content": reply})
        return events

    def _event(self, cid: str, turn: int, role: str, text: str, scenario: Scenario
               ) -> dict[str, Any]:
        r, o = self.result, self.result.options
        probe = {"run": r.run_id, "suite": r.suite.name, "suite_version": r.suite.version,
                 "endpoint_model": r.endpoint.model, "label": o.label, **scenario.marker()}
        if self.prompt_sha:
            probe["system_prompt_sha256"] = self.prompt_sha
        event = {"conversation_id": cid, "turn": turn, "role": role, "text": text,
                 "ts": datetime.now(UTC).isoformat(), "bot_id": o.bot_id,
                 "model": o.stored_model or r.endpoint.model, "metadata": {"probe": probe}}
        if o.tenant:
            event["tenant"] = o.tenant
        return event

    async def _flush(self) -> None:
        """Store every finished scenario whose predecessors are all stored, in suite order."""
        async with self.lock:
            ready: list[tuple[int, list[dict[str, Any]]]] = []
            while self.next in self.done:
                events = self.done.pop(self.next)
                if events is not None:
                    ready.append((self.next, events))
                self.next += 1
            if ready:
                await asyncio.to_thread(self._store, ready)

    def _store(self, ready: Sequence[tuple[int, list[dict[str, Any]]]]) -> None:
        r = self.result
        records = [RawRecord(f"probe:{r.run_id}", f"{r.suite.scenarios[i].id} turn {e['turn']}",
                             e) for i, events in ready for e in events]
        size = max(1, self.proc.settings.batch_size)
        for start in range(0, len(records), size):
            r.report.merge(self.proc.process(records[start:start + size]))
        r.stored += [r.suite.scenarios[i].id for i, _ in ready]
