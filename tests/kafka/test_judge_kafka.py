"""``chatmon judge --kafka``: the judge as its own consumer group on the phrases topic, against
the tansu broker and PostgreSQL, with a scripted judge server (a real local HTTP server; no
real LLM runs here). With the endpoint dead the workers store every turn and the judge's group
falls behind; when it comes back, the judge catches up on exactly the sampled replies."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from pipeline.judge.select import sample_point
from tests.judge.scripted_judge import ScriptedJudge
from tests.kafka.helpers import (
    CHATMON,
    ROOT,
    KafkaNames,
    Worker,
    chatmon,
    chatmon_env,
    db_counts,
    make_turns,
    wait_until,
    write_jsonl,
)

pytestmark = [pytest.mark.kafka, pytest.mark.postgres]
RATE = 0.3


def _judged(url: str) -> set[tuple[str, int]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = set(conn.execute(text("select conversation_id, turn from findings "
                                     "where detector = 'judge'")).all())
    engine.dispose()
    return {(r[0], int(r[1])) for r in rows}


def test_judge_group_waits_out_a_dead_endpoint_and_catches_up(
        kafka_bootstrap: str, names: KafkaNames, postgres_url: str, tmp_path: Path,
        workers: Callable[..., Worker]) -> None:
    env = chatmon_env(kafka_bootstrap, names, postgres_url)
    assert chatmon(["topics", "create"], env).returncode == 0
    turns = make_turns(60)
    path = write_jsonl(tmp_path / "turns.jsonl", turns)
    expected = {(t["conversation_id"], t["turn"]) for t in turns if t["role"] == "assistant"
                and sample_point(t["conversation_id"], t["turn"]) < RATE}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # a dead endpoint, for now
    workers(env)
    log = (tmp_path / "judge.log").open("w")
    judge = subprocess.Popen(
        [*CHATMON, "judge", "--kafka", "--group", f"{names.group}-judge", "--endpoint",
         f"http://127.0.0.1:{port}/v1", "--model", "judge-1", "--rubric", "epitome_er",
         "--sample-rate", str(RATE), "--no-always", "--poll", "0.3", "--retries", "0",
         "--json"], env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        produced = chatmon(["produce", str(path)], env)
        assert produced.returncode == 0, produced.stderr
        wait_until(lambda: db_counts(postgres_url)["window_turns"] >= 120, 120,
                   "the workers to store and score every turn")
        assert db_counts(postgres_url)["turns"] == 240  # the workers lost nothing
        assert judge.poll() is None and not _judged(postgres_url)  # the judge waits
        wait_until(lambda: "endpoint unavailable" in (tmp_path / "judge.log").read_text(), 60,
                   "the judge to find the endpoint dead")
        with ScriptedJudge(port=port) as server:
            wait_until(lambda: _judged(postgres_url) >= expected, 90, "the judge to catch up")
            os.kill(judge.pid, signal.SIGTERM)
            judge.wait(30)
        assert _judged(postgres_url) == expected
        assert len(server.requests) == len(expected) - _same_texts(turns, expected)
    finally:
        if judge.poll() is None:
            judge.kill()
        log.close()
    out = (tmp_path / "judge.log").read_text()
    assert "endpoint unavailable" in out
    assert json.loads(out[out.index("{"):])["judged"]["judge.epitome_er"] >= 1


def _same_texts(turns: list[dict], expected: set[tuple[str, int]]) -> int:
    """Replies whose (user turn, reply) pair repeats another's: the cache answers them."""
    by_key = {(t["conversation_id"], t["turn"]): t["text"] for t in turns}
    pairs = [(by_key[(c, t - 1)], by_key[(c, t)]) for c, t in expected]
    return len(pairs) - len(set(pairs))
