"""Prometheus metrics: names, what each batch report adds, bounded labels, batch tracking, the
``/metrics`` route of ``chatmon serve`` and ``chatmon run --metrics-port``."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from pipeline import metrics as m
from pipeline.errors import SinkError
from pipeline.scoring.process import BatchReport


def turn_row(cid: str, turn: int, role: str = "assistant", bot: str = "bot-a",
             tenant: str = "acme") -> dict[str, Any]:
    return dict(id=f"{cid}:{turn}", conversation_id=cid, turn=turn, role=role, bot_id=bot,
                tenant=tenant)


def finding_row(cid: str, turn: int, label: str, score: float = 0.9, flagged: bool = True,
                bot: str = "bot-a", tenant: str = "acme") -> dict[str, Any]:
    return dict(turn_id=f"{cid}:{turn}", conversation_id=cid, turn=turn, bot_id=bot,
                tenant=tenant, detector=label.split(".")[0], label=label, score=score,
                flagged=flagged, excerpt="call me at [PHONE]")


def report(turns: list[dict[str, Any]], findings: list[dict[str, Any]] = (),  # type: ignore[assignment]
           dead: dict[str, int] | None = None, errors: dict[str, int] | None = None,
           seconds: dict[str, float] | None = None) -> BatchReport:
    return BatchReport(records=len(turns) + sum((dead or {}).values()), turn_rows=turns,
                       finding_rows=list(findings), dead_letters=Counter(dead or {}),
                       detector_errors=Counter(errors or {}), detector_seconds=seconds or {})


@pytest.fixture
def pm() -> m.PipelineMetrics:
    return m.PipelineMetrics(CollectorRegistry(), max_label_values=3)


def value(pm: m.PipelineMetrics, name: str, **labels: str) -> float | None:
    return pm.registry.get_sample_value(name, labels)


def test_every_metric_name_has_the_prefix_and_a_collector(pm):
    exposed = {metric.name for metric in pm.registry.collect()}
    for name in m.ALL_METRICS:
        assert name.startswith(m.PREFIX)
        assert name.removesuffix("_total") in exposed, name


TURNS = m.TURNS_PROCESSED
CASES = [
    # (what, report, expected samples)
    ("turns by bot, tenant and role",
     report([turn_row("c1", 0, "user"), turn_row("c1", 1), turn_row("c2", 1, bot="bot-b")]),
     {(TURNS, (("bot", "bot-a"), ("tenant", "acme"), ("role", "user"))): 1,
      (TURNS, (("bot", "bot-a"), ("tenant", "acme"), ("role", "assistant"))): 1,
      (TURNS, (("bot", "bot-b"), ("tenant", "acme"), ("role", "assistant"))): 1,
      ("chatmon_events_processed_total", ()): 3}),
    ("flagged and unflagged findings apart; flagged turns once per turn and detector",
     report([turn_row("c1", 1)], [finding_row("c1", 1, "pii.leak"),
                                  finding_row("c1", 1, "pii.email_address"),
                                  finding_row("c1", 1, "pii.person", flagged=False)]),
     {("chatmon_findings_total", (("detector", "pii"), ("label", "pii.leak"), ("bot", "bot-a"),
                                  ("tenant", "acme"), ("flagged", "true"))): 1,
      ("chatmon_findings_total", (("detector", "pii"), ("label", "pii.person"), ("bot", "bot-a"),
                                  ("tenant", "acme"), ("flagged", "false"))): 1,
      ("chatmon_flagged_turns_total", (("detector", "pii"), ("bot", "bot-a"),
                                       ("tenant", "acme"))): 1}),
    ("empathy scores into the per-bot histogram",
     report([turn_row("c1", 1), turn_row("c2", 1)],
            [finding_row("c1", 1, "empathy.score", 0.25, False),
             finding_row("c2", 1, "empathy.score", 0.75, False)]),
     {("chatmon_empathy_score_count", (("bot", "bot-a"),)): 2,
      ("chatmon_empathy_score_sum", (("bot", "bot-a"),)): 1.0,
      ("chatmon_empathy_score_bucket", (("bot", "bot-a"), ("le", "0.3"))): 1}),
    ("dead letters by reason, detector errors and latency",
     report([], dead={"invalid_json": 2, "detector_error": 1}, errors={"toxicity": 1},
            seconds={"pii": 0.2}),
     {("chatmon_dead_letters_total", (("reason", "invalid_json"),)): 2,
      ("chatmon_dead_letters_total", (("reason", "detector_error"),)): 1,
      ("chatmon_detector_errors_total", (("detector", "toxicity"),)): 1,
      ("chatmon_detector_batch_seconds_count", (("detector", "pii"),)): 1,
      ("chatmon_detector_batch_seconds_bucket", (("detector", "pii"), ("le", "0.25"))): 1}),
    ("turns a detector skipped for their language",
     BatchReport(records=2, language_skipped=Counter({"toxicity": 2, "empathy": 1})),
     {("chatmon_turns_not_scored_language_total", (("detector", "toxicity"),)): 2,
      ("chatmon_turns_not_scored_language_total", (("detector", "empathy"),)): 1}),
]


@pytest.mark.parametrize(("what", "rep", "expected"), CASES, ids=[c[0] for c in CASES])
def test_batch_report_updates_the_counters(pm, what, rep, expected):
    pm.on_batch(rep)
    for (name, labels), want in expected.items():
        assert value(pm, name, **dict(labels)) == pytest.approx(want), (what, name, labels)


def test_otlp_exports_count_spans_by_outcome_and_skipped_messages_by_kind(pm):
    pm.otel_received(Counter({"chat": 2, "not_chat": 1, "refused": 0}),
                     Counter({"system": 1, "tool": 0}))
    pm.otel_received(Counter({"chat": 1, "no_content": 3}), Counter({"system": 1}))
    assert value(pm, m.OTEL_SPANS, outcome="chat") == 3
    assert value(pm, m.OTEL_SPANS, outcome="no_content") == 3
    assert value(pm, m.OTEL_SPANS, outcome="not_chat") == 1
    assert value(pm, m.OTEL_MESSAGES_SKIPPED, kind="system") == 2
    # A zero count makes no series, so an outcome that never happened is absent, not 0.
    assert value(pm, m.OTEL_SPANS, outcome="refused") is None
    assert value(pm, m.OTEL_MESSAGES_SKIPPED, kind="tool") is None


def test_no_conversation_ids_or_text_in_the_exposition(pm):
    pm.on_batch(report([turn_row("conv-secret-77", 1)],
                       [finding_row("conv-secret-77", 1, "pii.leak")]))
    body = generate_latest(pm.registry).decode()
    assert "chatmon_findings_total" in body
    assert "conv-secret-77" not in body and "PHONE" not in body


def test_bot_and_tenant_values_are_capped(pm):
    bots = [f"bot-{i}" for i in range(5)]
    pm.on_batch(report([turn_row("c", 1, bot=b) for b in bots] + [turn_row("d", 1, bot="")]))
    got = {s.labels["bot"] for metric in pm.registry.collect() for s in metric.samples
           if s.name == "chatmon_turns_processed_total"}
    assert got == {"bot-0", "bot-1", "bot-2", "other", "none"}
    assert value(pm, "chatmon_turns_processed_total", bot="other", tenant="acme",
                 role="assistant") == 2
    assert value(pm, "chatmon_label_values_capped_total", label="bot") == 2
    pm.on_batch(report([turn_row("e", 1, bot="bot-1")]))  # a kept value stays itself
    assert value(pm, "chatmon_turns_processed_total", bot="bot-1", tenant="acme",
                 role="assistant") == 2


def test_track_counts_input_latency_and_sink_errors(pm):
    with pm.track(5):
        assert value(pm, "chatmon_events_received_total") == 5  # counted before processing
    with pytest.raises(SinkError), pm.track(2):
        raise SinkError("cannot write batch")
    assert value(pm, "chatmon_events_received_total") == 7
    assert value(pm, "chatmon_sink_errors_total") == 1
    assert value(pm, "chatmon_batch_seconds_count") == 2
    with pytest.raises(ValueError), pm.track(1):
        raise ValueError("not a sink error")
    assert value(pm, "chatmon_sink_errors_total") == 1


def test_second_stage_adds_findings_but_not_turns_again(pm):
    rep = report([turn_row("c1", 1)], [finding_row("c1", 1, "repetition.stock_phrase")])
    pm.on_batch(rep)
    pm.on_findings_batch(rep)
    assert value(pm, TURNS, bot="bot-a", tenant="acme", role="assistant") == 1
    assert value(pm, m.EVENTS_PROCESSED) == 1
    assert value(pm, m.FINDINGS, detector="repetition", label="repetition.stock_phrase",
                 bot="bot-a", tenant="acme", flagged="true") == 2


def test_consumer_lag_gauge_and_listeners(pm):
    pm.set_consumer_lag("turns", 3, 120)
    assert value(pm, "chatmon_consumer_lag", topic="turns", partition="3") == 120
    seen: list[str] = []

    class Spy:
        def received(self, n: int) -> None:
            seen.append(f"received {n}")

        def on_batch(self, rep: BatchReport) -> None:
            seen.append(f"batch {rep.records}")

        def sink_error(self) -> None:
            seen.append("sink")

    pm.add_listener(Spy())
    with pm.track(1):
        pm.on_batch(report([turn_row("c", 1)]))
    pm.sink_error()
    assert seen == ["received 1", "batch 1", "sink"]


LEAK_EVENTS = [
    {"conversation_id": "m-1", "turn": 0, "role": "user", "text": "Where is my parcel?",
     "ts": "2026-11-20T10:00:00Z", "bot_id": "bot-m", "tenant": "t1"},
    {"conversation_id": "m-1", "turn": 1, "role": "assistant",
     "text": "Another customer, jane.roe@example.net, had the same issue.",
     "ts": "2026-11-20T10:00:05Z", "bot_id": "bot-m", "tenant": "t1"},
]


def test_real_processor_and_serve_route(sqlite_url, make_processor):
    """The processor's observer counts a planted leak; serve's /metrics shows it, no text."""
    from starlette.testclient import TestClient

    from pipeline.embedded.serve import create_app

    proc = make_processor(sqlite_url)
    proc.on_batch = m.get_metrics().on_batch
    before = m.REGISTRY.get_sample_value(
        "chatmon_findings_total", {"detector": "pii", "label": "pii.leak", "bot": "bot-m",
                                   "tenant": "t1", "flagged": "true"}) or 0
    with TestClient(create_app(proc.settings, proc)) as client:
        resp = client.post("/v1/turns", json=LEAK_EVENTS)
        assert resp.status_code == 200
        body = client.get("/metrics").text
    assert 'chatmon_findings_total{bot="bot-m",detector="pii",flagged="true",label="pii.leak"' \
           in body
    after = m.REGISTRY.get_sample_value(
        "chatmon_findings_total", {"detector": "pii", "label": "pii.leak", "bot": "bot-m",
                                   "tenant": "t1", "flagged": "true"})
    assert after == before + 1
    assert "jane.roe" not in body and "m-1" not in body


def test_run_serves_metrics_and_prints_the_endpoint(tmp_path, sqlite_url, monkeypatch,
                                                    make_processor, pii_suite):
    from click.testing import CliRunner

    from pipeline.cli import cli
    from pipeline.embedded import runner

    proc = make_processor(sqlite_url)
    monkeypatch.setattr(runner, "build_processor", lambda *a, **k: proc)  # the loaded suite
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(e) + "\n" for e in LEAK_EVENTS))
    res = CliRunner().invoke(cli, ["run", str(src), "--json", "--metrics-port", "0",
                                   "--database-url", sqlite_url])
    assert res.exit_code == 0, res.output
    endpoint = json.loads(res.output)["metrics_endpoint"]
    assert endpoint.startswith("http://127.0.0.1:") and endpoint.endswith("/metrics")
    with urllib.request.urlopen(endpoint, timeout=5) as resp:
        assert b"chatmon_events_received_total" in resp.read()
    text = CliRunner().invoke(cli, ["run", str(src), "--database-url", sqlite_url]).output
    assert "metrics endpoint: off" in text

