"""``chatmon probe`` end to end against the scripted bot on a loopback port, into SQLite, through
the real Processor. These tests run the pipeline with the style detector only (fast); the
model-against-model acceptance test with every detector is ``test_probe_compare.py``.

Covered: a failing scenario is reported and the rest are stored; retries through the CLI;
deterministic conversation ids, resume and new labels; what a stored probe turn carries; storing
in suite order whatever the completion order; the concurrency limit; the key never in output,
logs or the store; Ctrl-C keeps what is stored."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import create_engine, text

from pipeline.cli import cli
from pipeline.probe.client import Endpoint
from pipeline.probe.runner import ProbeOptions, conversation_id
from pipeline.probe.suite import load_suite
from tests.probe.scripted_bot import ScriptedBot

SECRET = "sk-live-7f3a9c1e-do-not-log"


def write_suite(path: Path, *scenarios: dict[str, Any], version: str = "0.1.0") -> Path:
    path.write_text(json.dumps({"suite": "t", "version": version, "scenarios": list(scenarios)}))
    return path


def sc(sid: str, *turns: str) -> dict[str, Any]:
    return {"id": sid, "category": "test", "turns": list(turns)}


@pytest.fixture
def bot() -> Iterator[ScriptedBot]:
    with ScriptedBot(slow_s=0.3) as b:
        yield b


@pytest.fixture
def env(sqlite_url: str) -> dict[str, str]:
    return {"CHATMON_DATABASE_URL": sqlite_url, "CHATMON_DETECTORS": '["style"]'}


def probe(env: dict[str, str], bot_url: str, suite: Path, *args: str) -> tuple[Result, Any]:
    res = CliRunner().invoke(cli, ["probe", "--endpoint", bot_url, "--model", "warm-1",
                                   "--suite", str(suite), "--backoff", "0.01", "--json", *args],
                             env=env)
    try:
        return res, json.loads(res.stdout)
    except ValueError:
        raise AssertionError(res.output) from None


def stored_conversations(env: dict[str, str]) -> int:
    try:
        return int(rows(env["CHATMON_DATABASE_URL"],
                        "select count(distinct conversation_id) from turns")[0][0])
    except Exception:  # the store is not created yet
        return 0


def rows(url: str, sql: str) -> list[Any]:
    engine = create_engine(url)
    with engine.connect() as conn:
        out = [tuple(r) for r in conn.execute(text(sql))]
    engine.dispose()
    return out


def test_a_failed_scenario_is_reported_and_the_rest_are_stored(tmp_path, bot, env) -> None:  # type: ignore[no-untyped-def]
    suite = write_suite(tmp_path / "s.json", sc("ok-1", "My order is late."),
                        sc("bad", "Please read this [fail400]"),
                        sc("flaky", "Where is my refund? [flaky500]"),
                        sc("two-turns", "How do I reset my password?", "It still fails!"))
    res, out = probe(env, bot.url, suite)
    assert res.exit_code == 1  # some scenario failed
    assert out["failed"] == [{"scenario": "bad", "error": "HTTP 400 Bad Request"}]
    assert out["scenarios"] == 4 and out["conversations_stored"] == 3
    assert out["turns_stored"] == 2 + 2 + 4 and out["retries"] == 2
    stored = rows(env["CHATMON_DATABASE_URL"], "select conversation_id, count(*) from turns "
                  "group by conversation_id order by 1")
    assert [(c.split("-")[1], n) for c, n in stored] == [("flaky", 2), ("ok", 2), ("two", 4)]
    assert rows(env["CHATMON_DATABASE_URL"], "select mode, source from runs") == [
        ("probe", f"probe {bot.url}")]


def test_an_empty_reply_is_a_dead_letter_and_a_missing_one_fails_the_scenario(  # type: ignore[no-untyped-def]
        tmp_path, bot, env) -> None:
    suite = write_suite(tmp_path / "s.json", sc("empty", "Say nothing [empty]", "Hello?"),
                        sc("null", "Say null [null]"), sc("fine", "My order is late."))
    res, out = probe(env, bot.url, suite)
    assert out["failed"] == [{"scenario": "null", "error":
                              "the response has no text at choices.0.message.content"}]
    assert out["dead_letter_reasons"] == {"empty_text": 1}  # the bot's empty reply
    assert out["turns_stored"] == 3 + 2  # the empty reply is not a turn; the rest are
    (dead,) = rows(env["CHATMON_DATABASE_URL"], "select reason, conversation_id, turn, source "
                   "from dead_letters")
    assert dead[0] == "empty_text" and dead[1].startswith("probe-empty-") and dead[2] == 1
    assert dead[3] == f"probe:{out['run_id']}"


def test_a_second_probe_resumes_and_a_new_label_starts_afresh(tmp_path, bot, env) -> None:  # type: ignore[no-untyped-def]
    suite = write_suite(tmp_path / "s.json", sc("a", "My order is late."),
                        sc("b", "Please read this [fail400]"), sc("c", "Thanks, bye!"))
    probe(env, bot.url, suite)
    sent = len(bot.requests)
    res, out = probe(env, bot.url, suite)
    assert out["already_stored"] == 2 and out["conversations_stored"] == 0
    assert len(bot.requests) - sent == 1  # only the failed scenario was sent again
    assert out["failed"][0]["scenario"] == "b" and res.exit_code == 1
    _, out = probe(env, bot.url, suite, "--label", "prompt-v2")
    assert out["conversations_stored"] == 2 and out["already_stored"] == 0
    convs = rows(env["CHATMON_DATABASE_URL"], "select distinct conversation_id from turns")
    assert len(convs) == 4  # 2 scenarios x 2 labels


def test_stored_turns_carry_bot_model_and_the_probe_marker(tmp_path, bot, env) -> None:  # type: ignore[no-untyped-def]
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are Acme's support assistant.")
    suite_path = write_suite(tmp_path / "s.json", sc("grief", "My cat died yesterday."))
    _, out = probe(env, bot.url, suite_path, "--bot-id", "acme-bot", "--store-as",
                   "warm-1+prompt-v2", "--tenant", "acme", "--label", "rc1",
                   "--system-prompt", str(prompt))
    assert bot.requests[-1]["body"]["messages"][0] == {
        "role": "system", "content": "You are Acme's support assistant."}
    (row,) = rows(env["CHATMON_DATABASE_URL"], "select conversation_id, bot_id, model, tenant, "
                  "metadata from turns where role = 'assistant'")
    cid, bot_id, model, tenant, meta = row
    assert (bot_id, model, tenant) == ("acme-bot", "warm-1+prompt-v2", "acme")
    probe_meta = json.loads(meta)["probe"]
    assert probe_meta == {"run": out["run_id"], "suite": "t", "suite_version": "0.1.0",
                          "endpoint_model": "warm-1", "label": "rc1", "scenario": "grief",
                          "category": "test",
                          "system_prompt_sha256": probe_meta["system_prompt_sha256"]}
    assert len(probe_meta["system_prompt_sha256"]) == 16
    suite = load_suite(suite_path)
    expected = conversation_id(suite, suite.scenarios[0],
                               Endpoint(bot.url, "warm-1", system_prompt=prompt.read_text()),
                               ProbeOptions(stored_model="warm-1+prompt-v2", label="rc1"))
    assert cid == expected and cid.startswith("probe-grief-")


def test_conversation_ids_change_only_with_what_makes_a_new_conversation(tmp_path: Path
                                                                         ) -> None:
    suite = load_suite(write_suite(tmp_path / "s.json", sc("a", "Hi there.")))
    newer = load_suite(write_suite(tmp_path / "s2.json", sc("a", "Hi there."), version="0.2.0"))
    ep, opts = Endpoint("http://x/v1", "m"), ProbeOptions()

    def cid(s=suite, e=ep, o=opts) -> str:  # type: ignore[no-untyped-def]
        return conversation_id(s, s.scenarios[0], e, o)

    base = cid()
    # where and how the bot is reached do not make a new conversation
    assert cid(e=Endpoint("http://other/v1", "m", temperature=0.1)) == base
    assert cid(o=ProbeOptions(concurrency=9, bot_id="other")) == base
    # what the bot is, what it is told and what is asked do
    changed = [cid(s=newer), cid(e=Endpoint("http://x/v1", "m", system_prompt="p")),
               cid(e=Endpoint("http://x/v1", "m2")), cid(o=ProbeOptions(label="v2")),
               cid(o=ProbeOptions(stored_model="m+prompt-v2"))]
    assert len({base, *changed}) == 1 + len(changed)


def test_conversations_are_stored_in_suite_order(tmp_path, bot, env) -> None:  # type: ignore[no-untyped-def]
    """The first scenario answers last (it is slow), yet it is stored first: stateful detectors
    see the suite's order, not the network's."""
    suite = write_suite(tmp_path / "s.json", sc("first", "Is it there yet? [slow]"),
                        sc("second", "Where is my order?"), sc("third", "Can I pay by card?"))
    probe(env, bot.url, suite, "--concurrency", "3")
    order = rows(env["CHATMON_DATABASE_URL"], "select conversation_id from turns "
                 "where role = 'user' order by stored_at, conversation_id")
    assert [c.split("-")[1] for c, in order] == ["first", "second", "third"]


def test_concurrency_limit_is_kept(tmp_path, bot, env) -> None:  # type: ignore[no-untyped-def]
    suite = write_suite(tmp_path / "s.json",
                        *(sc(f"s{i}", f"Question number {i} [slow]") for i in range(6)))
    _, out = probe(env, bot.url, suite, "--concurrency", "2")
    assert out["conversations_stored"] == 6
    assert bot.max_in_flight == 2


def test_the_api_key_is_sent_but_never_printed_logged_or_stored(tmp_path, env, caplog) -> None:  # type: ignore[no-untyped-def]
    suite = write_suite(tmp_path / "s.json", sc("a", "My order is late."),
                        sc("b", "Please read this [fail400]"))
    caplog.set_level(logging.DEBUG)
    with ScriptedBot(require_key=SECRET) as b:
        res, out = probe({**env, "CHATMON_PROBE_API_KEY": SECRET, "CHATMON_LOG_LEVEL": "DEBUG"},
                         b.url, suite)
        assert out["conversations_stored"] == 1  # the key was sent: the bot wants it
        res2, out2 = probe({**env, "OTHER_KEY": SECRET}, b.url, suite, "--api-key-env",
                           "OTHER_KEY", "--label", "other-env")
        assert out2["conversations_stored"] == 1
        res3, out3 = probe({**env, "CHATMON_PROBE_API_KEY": SECRET + "x"}, b.url, suite,
                           "--label", "wrong-key")
        assert [f["error"] for f in out3["failed"]] == ["HTTP 401 Unauthorized"] * 2
        assert [f["scenario"] for f in out3["failed"]] == ["a", "b"]  # suite order
    assert caplog.records  # the run did log at DEBUG
    for blob in (res.output, res2.output, res3.output, caplog.text,
                 json.dumps(rows(env["CHATMON_DATABASE_URL"], "select * from runs"), default=str),
                 json.dumps(rows(env["CHATMON_DATABASE_URL"], "select * from turns"),
                            default=str)):
        assert SECRET not in blob


def test_ctrl_c_keeps_what_is_stored_and_a_second_run_resumes(tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    """A real process and a real SIGINT while a slow reply is awaited."""
    suite = write_suite(tmp_path / "s.json", sc("a", "My order is late."),
                        sc("b", "Where is my refund?"),
                        *(sc(f"slow{i}", f"Is anyone there? {i} [slow]") for i in range(3)))
    cmd = [sys.executable, "-m", "pipeline.cli", "probe", "--model", "warm-1", "--suite",
           str(suite), "--concurrency", "1", "--json"]
    with ScriptedBot(slow_s=30.0) as slow_bot:
        # SIGINT at its default in the child even where this runs as a background job (a shell
        # without job control starts those with SIGINT ignored, and Python keeps it ignored).
        proc = subprocess.Popen([*cmd, "--endpoint", slow_bot.url], env={**os.environ, **env},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while len(slow_bot.requests) < 3 and time.monotonic() < deadline:  # "slow0" is asked
            time.sleep(0.1)
        # a and b are stored by a thread beside the conversations (the first store also loads
        # the redaction models): interrupt once both are in the store, while slow0 is awaited
        while time.monotonic() < deadline and stored_conversations(env) < 2:
            time.sleep(0.2)
        assert len(slow_bot.requests) == 3  # still awaiting slow0's reply
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    summary = json.loads(out)
    assert summary["interrupted"] is True and summary["conversations_stored"] == 2
    with ScriptedBot() as fast_bot:
        _, again = probe(env, fast_bot.url, suite, "--concurrency", "1")
        assert again["already_stored"] == 2 and again["conversations_stored"] == 3
        assert len(fast_bot.requests) == 3


@pytest.mark.parametrize(("own", "stored_probe"), [
    # the probe's own key is stored as is: digit runs in ids and model names survive
    ("probe", {"run": "12345678-1234-4234-9234-123456789012", "endpoint_model":
               "gpt-4o-2024-08-06", "contact": "ops@example.com"}),
    # any other caller (chatmon run, serve, workers) redacts every key, "probe" included, so
    # input cannot dodge redaction by naming its metadata "probe"
    (None, {"run": "<NUMBER>", "endpoint_model": "gpt-4o-<NUMBER>",
            "contact": "<EMAIL_ADDRESS>"}),
])
def test_own_metadata_is_stored_as_is_and_nothing_else_is(sqlite_url, make_processor, own,  # type: ignore[no-untyped-def]
                                                          stored_probe) -> None:
    from pipeline.ingest.events import RawRecord

    proc = make_processor(sqlite_url)
    proc.own_metadata = own
    event = {"conversation_id": "c1", "turn": 0, "role": "user", "text": "Hello there",
             "ts": "2026-11-20T10:00:00Z", "metadata": {
                 "probe": {"run": "12345678-1234-4234-9234-123456789012",
                           "endpoint_model": "gpt-4o-2024-08-06", "contact": "ops@example.com"},
                 "note": "call 555 0100 222 or ops@example.com"}}
    proc.process([RawRecord("test", "line 1", event)])
    ((meta,),) = rows(sqlite_url, "select metadata from turns")
    assert json.loads(meta) == {"probe": stored_probe,
                                "note": "call <NUMBER> or <EMAIL_ADDRESS>"}
