"""The retention settings in the policy file, ``chatmon purge``'s command line, and the ingest
gate's rule for events past their retention or covered by a deletion record."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from pipeline.cli import cli
from pipeline.ingest.events import RawRecord
from pipeline.lifecycle.gate import IngestGate
from pipeline.lifecycle.purge import Purger, Request
from pipeline.lifecycle.retention import Retention
from pipeline.policy.check import check_file
from pipeline.policy.engine import Policy
from pipeline.policy.file import PolicyFileError, parse_policy
from pipeline.store import db
from pipeline.store.deletions import Subject
from pipeline.store.sink import Sink, stable_id, turn_id

NOW = datetime.now(UTC)


@pytest.mark.parametrize(("toml", "problem"), [
    ("[bots.b]\nretention_days = 30", "bots.b.retention_days: unknown key"),
    ("retention_days = 0", "retention_days: Input should be greater than or equal to 1"),
    ("[tenants.t]\nretention_days = 'a month'", "tenants.t.retention_days: Input should be"),
])
def test_retention_errors_name_the_key(toml: str, problem: str) -> None:
    with pytest.raises(PolicyFileError) as err:
        parse_policy(toml, Path("p.toml"))
    assert any(p.startswith(problem) for p in err.value.problems), err.value.problems


def test_retention_per_tenant_and_for_dead_letters(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("retention_days = 90\n[tenants.globex]\nretention_days = 30\n"
                    "[tenants.acme.thresholds]\n\"toxicity.*\" = 0.6\n")
    r = Retention.from_policy(Policy(parse_policy(path.read_text(), path)))
    assert (r.days_for("globex"), r.days_for("acme"), r.days_for("")) == (30, 90, 90)
    assert r.dead_letter_cutoff(NOW) == NOW - timedelta(days=30)
    assert "rows kept 90 days, 1 tenants with their own retention" in check_file(path).summary()
    assert not Retention().configured and Retention().cutoff("x", NOW) is None


def turn_row(conv: str, ts: datetime, tenant: str = "acme") -> dict[str, Any]:
    return {"id": turn_id(conv, 0), "conversation_id": conv, "turn": 0, "role": "user",
            "ts": ts, "bot_id": "b", "model": "", "tenant": tenant, "lang": "en",
            "text_redacted": "hello", "content_hash": stable_id(conv), "n_chars": 5,
            "metadata": {}, "text_raw": None, "raw_expires_at": None, "run_id": None,
            "stored_at": ts}


@pytest.fixture
def store(sqlite_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    db.upgrade(sqlite_url)
    Sink(db.make_engine(sqlite_url)).write([turn_row("old", NOW - timedelta(days=40)),
                                            turn_row("new", NOW - timedelta(days=2))])
    monkeypatch.setenv("CHATMON_DATABASE_URL", sqlite_url)
    (tmp_path / "p.toml").write_text("[tenants.acme]\nretention_days = 30\n")
    return sqlite_url


def convs(url: str) -> set[str]:
    engine = create_engine(url)
    with engine.connect() as conn:
        out = {r[0] for r in conn.execute(text("select conversation_id from turns"))}
    engine.dispose()
    return out


@pytest.mark.parametrize(("args", "message"), [
    ([], "give exactly one of --expired"),
    (["--tenant", "a", "--bot", "b"], "give exactly one of"),
    (["--expired"], "no retention is configured"),
    (["--tenant", " "], "an empty name matches nothing"),
    (["--log", "--conversation", "a", "--conversation", "b"], "at most one --conversation"),
])
def test_usage_errors(store: str, args: list[str], message: str) -> None:
    res = CliRunner().invoke(cli, ["purge", *args])
    assert res.exit_code == 2 and message in res.output
    assert convs(store) == {"old", "new"}


def test_expired_dry_run_then_purge_then_log(store: str, tmp_path: Path) -> None:
    policy = ["--policy", str(tmp_path / "p.toml")]
    dry = CliRunner().invoke(cli, ["purge", "--expired", "--dry-run", *policy])
    assert dry.exit_code == 0 and dry.output.startswith("dry run: would purge turns 1")
    assert "tenant acme: before" in dry.output and convs(store) == {"old", "new"}
    done = CliRunner().invoke(cli, ["purge", "--expired", "--json", *policy])
    result = json.loads(done.output)
    assert result["rows"] == {"turns": 1} and convs(store) == {"new"}
    assert result["request"] == {"retention_days": None, "tenants": {"acme": 30}}
    log = CliRunner().invoke(cli, ["purge", "--log"])
    assert "chatmon purge --expired" in log.output and "expired -> turns 1" in log.output
    ids = tmp_path / "ids.txt"
    ids.write_text("new\n\nnobody\n")
    done = CliRunner().invoke(cli, ["purge", "--conversations-from", str(ids)])
    assert done.exit_code == 0 and "purged turns 1" in done.output and convs(store) == set()
    assert "2 conversation(s) -> turns 1" in CliRunner().invoke(cli, ["purge", "--log"]).output


def test_the_gate_drops_expired_and_deleted_events_and_keeps_newer_ones(
        sqlite_url: str, make_processor: Callable[..., Any], tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text("[tenants.acme]\nretention_days = 30\n")
    proc = make_processor(sqlite_url, policy_file=policy)

    def event(conv: str, days_ago: float, tenant: str = "acme") -> RawRecord:
        ts = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return RawRecord("t", conv, json.dumps({
            "conversation_id": conv, "turn": 0, "role": "user", "text": "Where is it?",
            "ts": ts, "tenant": tenant, "bot_id": "b"}))

    report = proc.process([event("too-old", 31), event("fine", 29), event("other", 400, "x")])
    assert report.dropped == {"expired": 1} and report.turns_stored == 2
    Purger(proc.sink.engine, "test").run(Request("tenant", tenant="x"))
    later = proc.process([event("other-2", 1, "x"), event("other-3", -0.01, "x")])
    assert later.dropped == {"deleted": 1} and [r["conversation_id"]
                                                for r in later.turn_rows] == ["other-3"]
    gate = IngestGate(proc.sink.engine, Retention())
    assert gate.reasons([Subject("fine", "acme", "b", datetime.now(UTC)), Subject("any", "x")]) == [
        None, "deleted"]


def test_metrics_count_purged_rows_and_dropped_events() -> None:
    from prometheus_client import CollectorRegistry

    from pipeline.metrics import PipelineMetrics
    from pipeline.scoring.process import BatchReport

    registry = CollectorRegistry()
    m = PipelineMetrics(registry)
    m.purged("turns", "expired", 3)
    report = BatchReport(records=4)
    report.dropped.update({"deleted": 2, "expired": 1})
    m.on_batch(report)
    value = registry.get_sample_value
    assert value("chatmon_purged_rows_total", {"table": "turns", "reason": "expired"}) == 3
    assert value("chatmon_events_dropped_total", {"reason": "deleted"}) == 2
    assert value("chatmon_events_dropped_total", {"reason": "expired"}) == 1
