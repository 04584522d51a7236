"""What reaches the judge endpoint: redacted text only (planted PII, raw text kept by opt-in),
and the API key only in its header: never in output, logs, the store or an error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import create_engine, text

from pipeline.ingest.events import RawRecord
from tests.conftest import ROOT
from tests.judge.conftest import conversation, dead_letters, judge_all, judge_rows
from tests.judge.scripted_judge import ScriptedJudge

PLANTED = {
    "email": "maria.gonzalez@example.org",
    "phone": "+1 415 555 0199",
    "card": "4111 1111 1111 1111",
    "name": "Maria Gonzalez",
    "street": "742 Evergreen Terrace",
}
CHATMON = (sys.executable, "-c", "from pipeline.cli import main; main()")


def planted_conversations() -> list[dict]:
    p = PLANTED
    return (conversation("p1", f"Hi, I'm {p['name']}, my e-mail is {p['email']} and my card "
                               f"{p['card']} was charged twice.",
                         f"Thanks {p['name']}, I've noted {p['email']} and will call you on "
                         f"{p['phone']}.")
            + conversation("p2", f"Please send it to {p['street']}, Springfield.",
                           f"Sure, we'll ship to {p['street']} and text {p['phone']}.",
                           minute=1))


def test_no_planted_value_reaches_the_endpoint_even_with_raw_text_kept(sqlite_url,
                                                                        make_processor):
    proc = make_processor(sqlite_url, keep_raw_text=True)
    proc.process([RawRecord("t", str(i), e) for i, e in enumerate(planted_conversations())])
    engine = create_engine(sqlite_url)
    with engine.connect() as conn:
        raw = " ".join(conn.execute(text("select text_raw from turns")).scalars())
    assert PLANTED["card"] in raw  # the opt-in raw copy is there to be leaked...
    with ScriptedJudge() as server:
        judge_all(sqlite_url, server.url, rubrics=("epitome_er", "empathy", "manipulation"))
        sent = server.bodies()
    assert len(judge_rows(sqlite_url)) == 6
    for what, value in PLANTED.items():  # ...and none of it is sent
        assert value not in sent, what
        assert value.replace(" ", "") not in sent.replace(" ", ""), what
    assert "<EMAIL_ADDRESS>" in sent and "<PERSON>" in sent


def _judge_cli(url: str, endpoint: str, *args: str, key: str | None = None
               ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMON_")}
    env.update(CHATMON_DATABASE_URL=url, CHATMON_LOG_LEVEL="DEBUG", HF_HUB_OFFLINE="1")
    if key is not None:
        env["CHATMON_JUDGE_API_KEY"] = key
    return subprocess.run([*CHATMON, "judge", "--endpoint", endpoint, "--model", "judge-1",
                           "--rubric", "epitome_er", "--sample-rate", "1", "--retries", "1",
                           "--backoff", "0.01", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_the_key_goes_in_the_header_and_nowhere_else(store, tmp_path: Path):
    secret = "sk-judge-Zq81wYx7Tq"
    url = store(conversation("c1", "Hi", "Hello, how can I help?"))
    with ScriptedJudge(require_key=secret) as server:
        ok = _judge_cli(url, server.url, "--json", key=secret)
        wrong = _judge_cli(url, server.url, "--rubric", "empathy", key="sk-wrong-" + secret)
    assert ok.returncode == 0, ok.stderr
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {secret}"
    assert len(judge_rows(url)) == 1
    assert wrong.returncode == 1 and "HTTP 401" in dead_letters(url)[0].detail
    for out in (ok.stdout, ok.stderr, wrong.stdout, wrong.stderr):
        assert secret not in out
    engine = create_engine(url)
    with engine.connect() as conn:
        stored = " ".join(str(v) for table in ("runs", "dead_letters", "findings")
                          for row in conn.execute(text(f"select * from {table}")) for v in row)
    assert secret not in stored and "judge once http://127.0.0.1:" in stored
