"""The data lifecycle in ``chatmon serve``, SQLite and PostgreSQL: DELETE /v1/conversations/{id}
reaches the store and the process's own state (context and repetition), its old events are
refused from then on while newer ones are stored; a ``chatmon purge`` run elsewhere reaches
the state through the deletion records; expiry runs on its schedule. Each writes an audit row."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import create_engine, text
from starlette.testclient import TestClient

from detectors.base import Turn
from detectors.repetition.detector import RepetitionDetector, state_key
from detectors.repetition.sketch import unpack
from detectors.repetition.state import conversation_hash
from pipeline.embedded.serve import create_app
from pipeline.lifecycle.audit import purge_log
from pipeline.lifecycle.purge import Purger, Request
from pipeline.scoring.suite import DetectorSuite

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
REPLY = "I'm sorry to hear that. Your blue kettle from the spring catalogue ships tomorrow."


def events(conv: str, reply: str = REPLY, ts: str = "2026-11-20T10:00:0{}Z") -> list[dict]:
    return [{"conversation_id": conv, "turn": i, "role": role, "text": text,
             "ts": ts.format(i), "bot_id": "web", "tenant": "acme"}
            for i, (role, text) in enumerate([("user", "My kettle has not arrived."),
                                              ("assistant", reply)])]


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    return sqlite_url if request.param == "sqlite" else request.getfixturevalue("postgres_url")


@pytest.fixture
def serve(make_processor: Callable[..., Any], pii_suite: Any) -> Callable[..., Any]:
    def build(url: str, **settings: Any) -> tuple[TestClient, Any]:
        suite = DetectorSuite([*pii_suite.detectors, RepetitionDetector()])
        proc = make_processor(url, suite=suite, serve_token=SecretStr(TOKEN), **settings)
        return TestClient(create_app(proc.settings, proc)), proc
    return build


def turns_of(url: str, conv: str) -> int:
    engine = create_engine(url)
    with engine.connect() as conn:
        n = conn.execute(text("select count(*) from turns where conversation_id = :c"),
                         {"c": conv}).scalar_one()
    engine.dispose()
    return int(n)


def state_hashes(proc: Any) -> set[int]:
    """The conversations in the repetition state of the bot the events use."""
    value = proc.state.get(state_key(Turn("x", 0, "assistant", "", datetime.now(UTC),
                                          bot_id="web", tenant="acme")))
    return set(unpack(value["rows"]["conv"], "u4").tolist()) if value else set()


def wait_for(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_delete_endpoint_reaches_store_and_state_and_refuses_replays(
        url: str, serve: Callable[..., Any]) -> None:
    client, proc = serve(url)
    with client:
        for conv in ("gone", "kept"):
            assert client.post("/v1/turns", json=events(conv), headers=AUTH).status_code == 200
        assert conversation_hash("gone") in state_hashes(proc)
        assert proc.contexts.history("gone")
        assert client.delete("/v1/conversations/gone").status_code == 401

        r = client.delete("/v1/conversations/gone", headers=AUTH)
        assert r.status_code == 200
        rows = r.json()["rows"]
        assert rows["turns"] == 2 and rows["findings"] >= 1
        assert rows["state.context"] == 1 and rows["state.repetition"] >= 1
        assert turns_of(url, "gone") == 0 and turns_of(url, "kept") == 2
        assert conversation_hash("gone") not in state_hashes(proc)
        assert conversation_hash("kept") in state_hashes(proc)
        assert not proc.contexts.history("gone")

        # A replay of its old events stores nothing; a newer turn of it is stored.
        assert client.post("/v1/turns", json=events("gone"), headers=AUTH).status_code == 200
        assert turns_of(url, "gone") == 0 and conversation_hash("gone") not in state_hashes(proc)
        later = (datetime.now(UTC) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        newer = [{**events("gone")[0], "turn": 5, "ts": later}]
        assert client.post("/v1/turns", json=newer, headers=AUTH).status_code == 200
        assert turns_of(url, "gone") == 1
        metrics = client.get("/metrics").text
        assert 'chatmon_purged_rows_total{reason="conversation",table="turns"}' in metrics
    (log,) = purge_log(proc.sink.engine)
    assert log["command"] == "DELETE /v1/conversations" and log["rows"] == rows
    assert "gone" not in str(log)


def test_a_purge_run_elsewhere_reaches_the_running_state(
        url: str, serve: Callable[..., Any]) -> None:
    client, proc = serve(url, deletion_poll_s=0.05)
    with client:
        for conv in ("gone", "kept"):
            client.post("/v1/turns", json=events(conv), headers=AUTH)
        assert conversation_hash("gone") in state_hashes(proc)
        Purger(proc.sink.engine, "chatmon purge --conversation").run(
            Request("conversation", ("gone",)))
        wait_for(lambda: conversation_hash("gone") not in state_hashes(proc), "the poll")
        assert not proc.contexts.history("gone") and proc.contexts.history("kept")
    logs = purge_log(proc.sink.engine)
    assert [r["command"] for r in logs] == ["chatmon serve: deletion records",
                                            "chatmon purge --conversation"]
    assert logs[0]["rows"]["state.context"] == 1 and logs[0]["rows"]["state.repetition"] >= 1


def test_scheduled_expiry(url: str, serve: Callable[..., Any], tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[tenants.acme]\nretention_days = 10\n")
    client, proc = serve(url, policy_file=policy, purge_interval_s=0.1)
    old = datetime.now(UTC) - timedelta(days=11)
    # Stored before the policy said so (the ingest gate would refuse them now).
    from pipeline.store.sink import stable_id, turn_id

    proc.sink.write([{
        "id": turn_id("old", 0), "conversation_id": "old", "turn": 0, "role": "user", "ts": old,
        "bot_id": "web", "model": "", "tenant": "acme", "lang": "en", "text_redacted": "hi",
        "content_hash": stable_id("hi"), "n_chars": 2, "metadata": {}, "text_raw": None,
        "raw_expires_at": None, "run_id": None, "stored_at": old}])
    with client:
        recent = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:0{}Z")
        client.post("/v1/turns", json=events("new", ts=recent), headers=AUTH)
        too_old = old.strftime("%Y-%m-%dT%H:%M:0{}Z")
        client.post("/v1/turns", json=events("late", ts=too_old), headers=AUTH)
        wait_for(lambda: turns_of(url, "old") == 0, "the scheduled expiry")
    assert turns_of(url, "new") == 2 and turns_of(url, "late") == 0  # refused at ingest
    (log,) = purge_log(proc.sink.engine)
    assert log["command"] == "chatmon serve: scheduled expiry" and log["rows"]["turns"] == 1
