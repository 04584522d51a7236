"""Helpers of the Kafka integration tests: worker subprocesses, unique names, turn generators,
store counts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4
CHATMON = (sys.executable, "-c", "from pipeline.cli import main; main()")
W = TypeVar("W", bound="Worker")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], Any], timeout: float, what: str,
               every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def connectable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass
class KafkaNames:
    """Unique topics and group for one test."""

    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    @property
    def group(self) -> str:
        return f"chatmon-test-{self.suffix}"

    @property
    def turns(self) -> str:
        return f"turns-{self.suffix}"

    @property
    def phrases(self) -> str:
        return f"phrases-{self.suffix}"

    @property
    def dlq(self) -> str:
        return f"turns.dlq-{self.suffix}"


def chatmon_env(bootstrap: str, names: KafkaNames, database_url: str,
                detectors: tuple[str, ...] = ("repetition",), **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMON_")}
    env.update({
        "CHATMON_KAFKA_BOOTSTRAP": bootstrap, "CHATMON_DATABASE_URL": database_url,
        "CHATMON_DETECTORS": json.dumps(list(detectors)), "CHATMON_KAFKA_GROUP": names.group,
        "CHATMON_KAFKA_TURNS_TOPIC": names.turns, "CHATMON_KAFKA_PHRASES_TOPIC": names.phrases,
        "CHATMON_KAFKA_DLQ_TOPIC": names.dlq, "CHATMON_KAFKA_PARTITIONS": str(PARTITIONS),
        "CHATMON_KAFKA_SESSION_TIMEOUT_S": "4", "CHATMON_KAFKA_BATCH_WITHIN_S": "0.3",
        "CHATMON_BATCH_SIZE": "50", "CHATMON_KAFKA_PRODUCER_MAX_BATCH_SIZE": "1",
        "CHATMON_LOG_LEVEL": "WARNING", "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
    })
    env.update(extra)
    return env


def chatmon(args: list[str], env: dict[str, str], timeout: float = 120,
            **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CHATMON, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, **kwargs)


class Worker:
    """One ``chatmon worker`` subprocess with its own web port."""

    def __init__(self, env: dict[str, str], log_dir: Path, name: str) -> None:
        self.env = env
        self.port = free_port()
        self.log_path = log_dir / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: bool = True) -> Worker:
        """Launch the worker; with ``wait``, return once it is ready (else call ``ready``)."""
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [*CHATMON, "worker", "--no-migrate", "--web-host", "127.0.0.1",
                 "--web-port", str(self.port)],
                env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        return self.ready() if wait else self

    def ready(self) -> Worker:
        wait_until(lambda: self.get("/ready") is not None or not self.alive(), 90,
                   f"worker on port {self.port} to be ready")
        assert self.alive(), self.log()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def get(self, path: str) -> dict[str, Any] | None:
        body = self.text(path)
        return json.loads(body) if body is not None else None

    def text(self, path: str) -> str | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return r.read().decode()
        except OSError:
            return None

    def stats(self) -> dict[str, Any]:
        return self.get("/health") or {}

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if not self.alive():
            return
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def describe(self) -> str:
        """What a failure message needs of this worker: its /health and its log's warnings."""
        lines = [line for line in self.log_path.read_text(errors="replace").splitlines()
                 if "WARNING" in line or "ERROR" in line]
        return f"/health {self.stats()}, log:\n" + "\n".join(lines[-30:])


def all_stored(url: str, turns: int) -> bool:
    """Every turn stored and stage 2's window finding on every assistant turn."""
    counts = db_counts(url)
    return counts["turns"] >= turns and counts["window_turns"] >= turns // 2


def turn_partitions(worker: Worker, topic: str) -> set[str]:
    parts = worker.stats().get("lag", {}).get("partitions", {})
    return {p for p in parts if p.rsplit(":", 1)[0] == topic}


def balanced(a: Worker, b: Worker, topic: str) -> bool:
    """Both workers hold partitions of ``topic``, none twice, all of them between them."""
    pa, pb = turn_partitions(a, topic), turn_partitions(b, topic)
    return bool(pa) and bool(pb) and not pa & pb and len(pa | pb) == PARTITIONS


def kill_mid_stream(env: dict[str, str], path: Path, rate: int, victim: Worker, after: int,
                    restart: Callable[[], W]) -> W:
    """Produce ``path`` at ``rate`` turns/s; once ``victim`` has taken ``after`` turns, SIGKILL
    it while turns are still produced and ``restart`` a worker at once (two rebalances in quick
    succession, the case where faust alone skipped events: pipeline/kafka/offsets.py); return
    the restarted worker when everything was produced."""
    producer = subprocess.Popen([*CHATMON, "produce", str(path), "--rate", str(rate),
                                 "--no-progress"], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: victim.stats().get("records", {}).get("stage1", 0) >= after, 120,
                   "the victim worker to be mid-stream")
        victim.kill()
        assert producer.poll() is None, "the kill should happen while turns are still produced"
        restarted = restart()
        assert producer.wait(120) == 0
        return restarted
    finally:
        if producer.poll() is None:
            producer.kill()


PHRASE = "Is there anything else I can help you with today"


def make_turns(n_conversations: int, turns_per_conversation: int = 4, bots: int = 3,
               prefix: str = "c") -> list[dict[str, Any]]:
    """Support conversations: user and assistant turns alternate; every third assistant reply of
    bot-0 ends with the same stock phrase (the repetition detector's target)."""
    out = []
    for c in range(n_conversations):
        bot = f"bot-{c % bots}"
        for t in range(turns_per_conversation):
            role = "user" if t % 2 == 0 else "assistant"
            if role == "user":
                text = f"Hello, my order {c} for item {t} has not arrived yet, can you check?"
            else:
                text = f"I checked order {c}: it ships on day {t + c % 7} by courier {c % 5}."
                if bot == "bot-0" and c % 3 == 0:
                    text += f" {PHRASE}?"
            out.append({"conversation_id": f"{prefix}{c:05d}", "turn": t, "role": role,
                        "text": text, "ts": f"2026-03-01T10:{t:02d}:{c % 60:02d}Z",
                        "bot_id": bot})
    return out


def write_jsonl(path: Path, rows: list[dict[str, Any]],
                extra_lines: tuple[str, ...] = ()) -> Path:
    with path.open("w") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
        for line in extra_lines:
            fh.write(line + "\n")
    return path


def db_counts(url: str) -> dict[str, int]:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            q = {
                "turns": "select count(*) from turns",
                "assistant": "select count(*) from turns where role = 'assistant'",
                "distinct_turns": "select count(distinct (conversation_id, turn)) from turns",
                "findings": "select count(*) from findings",
                "repetition": "select count(*) from findings where detector = 'repetition'",
                "repetition_turns": "select count(distinct turn_id) from findings "
                                    "where detector = 'repetition'",
                "windows": "select count(*) from findings where label = 'repetition.window'",
                "window_turns": "select count(distinct turn_id) from findings "
                                "where label = 'repetition.window'",
                "dead_letters": "select count(*) from dead_letters",
            }
            return {k: conn.execute(text(v)).scalar_one() for k, v in q.items()}
    finally:
        engine.dispose()
