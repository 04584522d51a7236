"""Done-when of issue 17.3: a bot that repeats a customer's full card number under ``chatmon
serve`` pages through ``CHATMON_ALERT_WEBHOOK_URL`` (a real loopback HTTP receiver), and the raw
value is in neither the alert, the database nor the logs (DEBUG). A masked card in the same
run pages nothing. Needs no Prometheus (the Prometheus rule: tests/alerting/test_e2e.py and
tests/test_alerts_rules.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.alerting.receiver import Receiver
from tests.alerting.test_e2e import ROOT, free_port, get, wait_until

pytestmark = pytest.mark.timeout(300)
CARD = "4111 1111 1111 1111"
RAW = (CARD, CARD.replace(" ", ""), "4111-1111-1111-1111")


def _post(url: str, events: list[dict[str, Any]]) -> None:
    req = urllib.request.Request(f"{url}/v1/turns", data=json.dumps(events).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=120) as resp:
        assert resp.status == 200


def _conversation(conv: str, bot: str, reply: str) -> list[dict[str, Any]]:
    base = {"bot_id": bot, "tenant": "acme"}
    return [
        {"conversation_id": conv, "turn": 0, "role": "user", "ts": "2026-11-21T10:00:00Z",
         "text": f"I was charged twice on my card {CARD}, please fix it.", **base},
        {"conversation_id": conv, "turn": 1, "role": "assistant", "ts": "2026-11-21T10:00:04Z",
         "text": reply, **base},
    ]


def test_card_echo_under_serve_pages_the_webhook_without_the_raw_value(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    db = tmp_path / "chatmon.db"
    with Receiver() as rx:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMON_")}
        env.update({
            "CHATMON_DETECTORS": '["pii"]', "CHATMON_DATABASE_URL": f"sqlite:///{db}",
            "CHATMON_LOG_LEVEL": "DEBUG", "CHATMON_ALERT_WEBHOOK_URL": rx.url("/page"),
            "CHATMON_ALERT_EVAL_INTERVAL_S": "0.5", "CHATMON_ALERT_COOLDOWN_S": "0",
            "HF_HUB_OFFLINE": "1", "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost"})
        with log.open("wb") as fh:
            proc = subprocess.Popen(
                [sys.executable, "-c", "from pipeline.cli import main; main()", "serve",
                 "--port", str(port)], stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: b'"ok"' in get(f"{url}/health"), 240, "chatmon serve", proc, log)
            _post(url, _conversation("masked-1", "bot-masked",
                                     "I have refunded the duplicate charge on your card ending "
                                     "1111 (4111 11** **** 1111)."))
            _post(url, _conversation("echo-1", "bot-echo",
                                     f"I have refunded the duplicate charge on {CARD}"))
            page = rx.wait_for(lambda r: r[0] == "/page"
                               and r[1].get("rule") == "ChatmonSensitiveEcho", 30)
            assert page is not None, f"no page; got {[r[1].get('rule') for r in rx.requests]}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    body = page[1]
    assert body["status"] == "firing" and body["severity"] == "page"
    assert body["labels"]["bot"] == "bot-echo" and body["labels"]["detector"] == "pii"
    assert body["evidence"] == [{"conversation_id": "echo-1", "turn": 1,
                                 "label": "pii.sensitive_echo"}]
    echo_pages = [r for r in rx.requests if r[1].get("rule") == "ChatmonSensitiveEcho"]
    assert {r[1]["labels"]["bot"] for r in echo_pages} == {"bot-echo"}  # masked: no page
    # Every file serve left (the SQLite file and its WAL) and every row it stored, as text.
    everything = {"alerts": b"".join(r[2] for r in rx.requests)}
    everything.update({f.name: f.read_bytes() for f in tmp_path.iterdir()})
    engine = create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        replies = [r[0] for r in conn.execute(text(
            "select text_redacted from turns where role = 'assistant' order by conversation_id"))]
        for table in ("turns", "findings", "dead_letters"):
            rows = conn.execute(text(f"select * from {table}")).all()
            everything[f"table {table}"] = repr(rows).encode()
    engine.dispose()
    for name, blob in everything.items():
        for raw in RAW:
            assert raw.encode() not in blob, f"raw card number in {name}"
    assert replies[0] == "I have refunded the duplicate charge on <CREDIT_CARD>"
