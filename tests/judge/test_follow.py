"""``chatmon judge --follow`` beside ``chatmon run``: with the judge endpoint dead, the run
stores every turn as usual (the judge is another process reading the store); when the endpoint
comes back, the judge catches up on exactly the sampled turns, from its cursor."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from pipeline.judge.select import sample_point
from tests.conftest import ROOT
from tests.judge.conftest import conversations
from tests.judge.scripted_judge import ScriptedJudge
from tests.kafka.helpers import wait_until

CHATMON = (sys.executable, "-c", "from pipeline.cli import main; main()")
RATE = 0.4


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMON_")}
    env.update(CHATMON_DATABASE_URL=url, CHATMON_DETECTORS='["pii"]', HF_HUB_OFFLINE="1",
               PYTHONUNBUFFERED="1")
    return env


def _count(url: str, sql: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        n = int(conn.execute(text(sql)).scalar_one())
    engine.dispose()
    return n


UNAVAILABLE = "endpoint unavailable: cannot reach the endpoint"


def test_dead_endpoint_delays_only_the_judge_which_catches_up(sqlite_url, tmp_path: Path):
    events = conversations(40)
    data = tmp_path / "turns.jsonl"
    data.write_text("".join(json.dumps(e) + "\n" for e in events))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here yet: a dead endpoint
    env = _env(sqlite_url)
    subprocess.run([*CHATMON, "db", "upgrade"], env=env, cwd=ROOT, check=True, timeout=120,
                   capture_output=True)
    log = (tmp_path / "judge.log").open("w")
    judge = subprocess.Popen(
        [*CHATMON, "judge", "--follow", "--endpoint", f"http://127.0.0.1:{port}/v1",
         "--model", "judge-1", "--rubric", "epitome_er", "--sample-rate", str(RATE),
         "--no-always", "--poll", "0.2", "--settle", "0", "--retries", "0", "--json"],
        env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        run = subprocess.run([*CHATMON, "run", "--json", "--no-progress", str(data)], env=env,
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        summary = json.loads(run.stdout)
        assert summary["turns_stored"] == len(events) == 80  # nothing lost, nothing waited for
        assert judge.poll() is None  # the judge is still there, retrying
        assert _count(sqlite_url, "select count(*) from findings where detector='judge'") == 0
        # The judge has tried the dead endpoint and said so before the endpoint comes up (a
        # judge slower to start than the run would otherwise meet a live endpoint first).
        wait_until(lambda: UNAVAILABLE in (tmp_path / "judge.log").read_text(), 60,
                   "the judge to find the endpoint dead")
        expected = {f"c{i:04d}" for i in range(40) if sample_point(f"c{i:04d}", 1) < RATE}
        with ScriptedJudge(port=port) as server:
            wait_until(lambda: _count(sqlite_url, "select count(*) from findings where "
                                      "detector = 'judge'") >= len(expected), 60,
                       "the judge to catch up")
            os.kill(judge.pid, signal.SIGTERM)
            judge.wait(30)
        engine = create_engine(sqlite_url)
        with engine.connect() as conn:
            judged = set(conn.execute(text("select conversation_id from findings where "
                                           "detector = 'judge'")).scalars())
            cursor = conn.execute(text("select turn_id from judge_cursors")).scalar_one()
        assert judged == expected
        assert len(server.requests) == len(expected)  # each sampled reply asked once
        assert cursor  # the position is kept: a restart goes on from there
    finally:
        if judge.poll() is None:
            judge.kill()
        log.close()
    out = (tmp_path / "judge.log").read_text()
    assert UNAVAILABLE in out  # it said why it waited
    assert json.loads(out[out.index("{"):])["judged"] == {"judge.epitome_er": len(expected)}
