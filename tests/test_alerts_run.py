"""``chatmon run`` (the embedded runner) with a webhook configured: a planted leak in a file is
alerted before the run returns, evidence by conversation and turn, no raw PII."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.embedded import runner
from pipeline.metrics import get_metrics
from tests.alerting.receiver import Receiver

LEAK = "jane.roe@example.net"


def test_run_delivers_embedded_alerts_before_returning(tmp_path: Path, sqlite_url, make_processor):
    src = tmp_path / "leak.jsonl"
    events = [
        {"conversation_id": "run-1", "turn": 0, "role": "user", "text": "Is my refund done?",
         "ts": "2026-11-21T09:00:00Z", "bot_id": "bot-run", "tenant": "t9"},
        {"conversation_id": "run-1", "turn": 1, "role": "assistant",
         "text": f"Yes. By the way, {LEAK} asked the same.", "ts": "2026-11-21T09:00:03Z",
         "bot_id": "bot-run", "tenant": "t9"},
        {"conversation_id": "run-2", "turn": 0, "role": "user", "text": "Hello",
         "ts": "2026-11-21T09:01:00Z", "bot_id": "bot-clean", "tenant": "t9"},
        {"conversation_id": "run-2", "turn": 1, "role": "assistant", "text": "Hi, how can I help?",
         "ts": "2026-11-21T09:01:02Z", "bot_id": "bot-clean", "tenant": "t9"},
    ]
    src.write_text("".join(json.dumps(e) + "\n" for e in events))
    with Receiver() as rx:
        proc = make_processor(sqlite_url, alert_webhook_url=rx.url("/hook"),
                              alert_eval_interval_s=60)
        proc.on_batch = get_metrics().on_batch
        listeners = list(get_metrics().listeners)
        runner.run([str(src)], proc.settings, progress=False, processor=proc)
        assert get_metrics().listeners == listeners  # the engine is detached after the run
    bodies = [body for path, body, _ in rx.requests if path == "/hook"]
    assert [(b["rule"], b["status"], b["labels"]["bot"]) for b in bodies] == \
        [("ChatmonPIILeak", "firing", "bot-run")]
    assert bodies[0]["evidence"] == [{"conversation_id": "run-1", "turn": 1, "label": "pii.leak"}]
    assert all(LEAK not in raw.decode() for _, _, raw in rx.requests)
