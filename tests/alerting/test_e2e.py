"""End to end with the real tools: ``chatmon serve`` (PII detector only) scraped by a real
Prometheus (1 s scrape and evaluation) evaluating the generated rules, alerts routed by the
shipped Alertmanager example to a loopback receiver; and the embedded-mode webhooks of the same
``chatmon serve`` process. A planted PII leak must page within 30 s with the right labels and no
raw PII, then resolve; a bot echoing a full card number pages on both paths (issue 17.3).

Skipped only when the Debian binaries are absent (``make system-deps`` installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pipeline.alerts.promql import render_rules
from pipeline.alerts.rules import rules
from tests.alerting.receiver import Receiver, Request

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
pytestmark = [
    pytest.mark.skipif(PROMETHEUS is None or ALERTMANAGER is None,
                       reason="prometheus / prometheus-alertmanager binaries not installed "
                              "(Debian packages; `make system-deps` installs them)"),
    pytest.mark.timeout(300),
]
SLACK_TOKEN = "T0E2E/B0E2E/e2eSlackSecret"
ROUTING_KEY = "e2eRoutingKeySecret"
AM_ROUTING_KEY = "amRoutingKeySecret"
LEAKED = ("jane.roe@example.net", "(212) 555-0147")
PROM_WINDOW_S = 10
EMBEDDED_WINDOW_S = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read()


def wait_until(check: Any, timeout_s: float, what: str, proc: subprocess.Popen[bytes] | None = None,
               log: Path | None = None) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"{what}: process exited {proc.returncode}\n"
                        f"{log.read_text()[-3000:] if log else ''}")
        try:
            result = check()
            if result:
                return result
        except OSError:
            pass
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}\n"
                f"{log.read_text()[-3000:] if log else ''}")


@dataclass
class Stack:
    chatmon_url: str
    prometheus_url: str
    receiver: Receiver
    chatmon_log: Path


def _start(cmd: list[str], log: Path, env: dict[str, str] | None = None,
           procs: list[subprocess.Popen[bytes]] | None = None) -> subprocess.Popen[bytes]:
    fh = log.open("wb")
    proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    if procs is not None:
        procs.append(proc)
    return proc


def _chatmon_env(tmp: Path, rx: Receiver) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHATMON_")}
    env.update({
        "CHATMON_DETECTORS": '["pii"]',
        "CHATMON_DATABASE_URL": f"sqlite:///{tmp / 'chatmon.db'}",
        "CHATMON_LOG_LEVEL": "DEBUG",
        "CHATMON_ALERT_WEBHOOK_URL": rx.url("/embedded/json"),
        "CHATMON_ALERT_SLACK_WEBHOOK_URL": rx.url(f"/embedded/services/{SLACK_TOKEN}"),
        "CHATMON_ALERT_PAGERDUTY_ROUTING_KEY": ROUTING_KEY,
        "CHATMON_ALERT_PAGERDUTY_URL": rx.url("/embedded/v2/enqueue"),
        "CHATMON_ALERT_RULES": json.dumps({"ChatmonPIILeak": {"window_s": EMBEDDED_WINDOW_S}}),
        "CHATMON_ALERT_EVAL_INTERVAL_S": "0.5",
        "CHATMON_ALERT_COOLDOWN_S": "0",
        "HF_HUB_OFFLINE": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    })
    return env


def _alertmanager_config(rx: Receiver) -> dict[str, Any]:
    """The shipped example, pointed at the loopback receiver, with 1 s grouping."""
    yaml = pytest.importorskip("yaml")
    cfg = yaml.safe_load((ROOT / "deploy/alertmanager/alertmanager.yml").read_text())
    for route in [cfg["route"], *cfg["route"]["routes"]]:
        route.update(group_wait="1s", group_interval="1s")
    for receiver in cfg["receivers"]:
        for pd in receiver.get("pagerduty_configs", []):
            pd.update(url=rx.url("/am/pagerduty"), routing_key=AM_ROUTING_KEY)
        for slack in receiver.get("slack_configs", []):
            slack["api_url"] = rx.url("/am/slack")
    return cfg


def _prometheus_config(tmp: Path, chatmon_port: int, am_port: int) -> dict[str, Any]:
    rules_file = tmp / "rules.yml"
    rules_file.write_text(render_rules(rules({"ChatmonPIILeak": {"window_s": PROM_WINDOW_S}})))
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules_file)],
        "alerting": {"alertmanagers": [{"static_configs": [
            {"targets": [f"127.0.0.1:{am_port}"]}]}]},
        "scrape_configs": [{"job_name": "chatmon", "static_configs": [
            {"targets": [f"127.0.0.1:{chatmon_port}"]}]}],
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("alerting")
    procs: list[subprocess.Popen[bytes]] = []
    with Receiver() as rx:
        try:
            yield _bring_up(tmp, rx, procs)
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


def _bring_up(tmp: Path, rx: Receiver, procs: list[subprocess.Popen[bytes]]) -> Stack:
    cm_port, prom_port, am_port = free_port(), free_port(), free_port()
    cm_log = tmp / "chatmon.log"
    chatmon = _start([sys.executable, "-c", "from pipeline.cli import main; main()", "serve",
                      "--port", str(cm_port)],
                     cm_log, _chatmon_env(tmp, rx), procs)
    (tmp / "am.yml").write_text(json.dumps(_alertmanager_config(rx)))  # JSON is YAML
    am = _start([ALERTMANAGER, f"--config.file={tmp / 'am.yml'}",  # type: ignore[list-item]
                 f"--storage.path={tmp / 'am-data'}",
                 f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
                tmp / "am.log", procs=procs)
    (tmp / "prometheus.yml").write_text(json.dumps(_prometheus_config(tmp, cm_port, am_port)))
    prom = _start([PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}",  # type: ignore[list-item]
                   f"--storage.tsdb.path={tmp / 'prom-data'}",
                   f"--web.listen-address=127.0.0.1:{prom_port}"], tmp / "prom.log", procs=procs)
    wait_until(lambda: get(f"http://127.0.0.1:{am_port}/-/ready"), 30, "alertmanager", am,
               tmp / "am.log")
    wait_until(lambda: get(f"http://127.0.0.1:{prom_port}/-/ready"), 30, "prometheus", prom,
               tmp / "prom.log")
    wait_until(lambda: b'"ok"' in get(f"http://127.0.0.1:{cm_port}/health"), 240,
               "chatmon serve /health", chatmon, cm_log)
    prom_url = f"http://127.0.0.1:{prom_port}"
    wait_until(lambda: _query(prom_url, 'up{job="chatmon"} == 1'), 30, "first scrape")
    return Stack(f"http://127.0.0.1:{cm_port}", prom_url, rx, cm_log)


def _query(prom_url: str, expr: str) -> list[Any]:
    url = f"{prom_url}/api/v1/query?query={urllib.parse.quote(expr)}"
    return json.loads(get(url))["data"]["result"]


def post_leak(stack: Stack, bot: str, conversation: str) -> None:
    events = [
        {"conversation_id": conversation, "turn": 0, "role": "user",
         "text": "Hi, my parcel never arrived.", "ts": "2026-11-21T10:00:00Z",
         "bot_id": bot, "tenant": "acme"},
        {"conversation_id": conversation, "turn": 1, "role": "assistant",
         "text": f"Another customer, {LEAKED[0]}, phone {LEAKED[1]}, had the same issue.",
         "ts": "2026-11-21T10:00:04Z", "bot_id": bot, "tenant": "acme"},
    ]
    req = urllib.request.Request(f"{stack.chatmon_url}/v1/turns", data=json.dumps(events).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200


def no_raw_pii(req: Request) -> None:
    raw = req[2].decode()
    for value in LEAKED:
        assert value not in raw
    assert "example.net" not in raw and "2125550147" not in raw and "555-0147" not in raw


def test_prometheus_alertmanager_page_and_resolve(stack: Stack):
    rx = stack.receiver
    t0 = time.monotonic()
    post_leak(stack, "bot-prom", "e2e-prom-1")

    def pd(action: str) -> Any:
        return lambda r: (r[0] == "/am/pagerduty" and r[1].get("event_action") == action
                          and r[1].get("payload", {}).get("custom_details", {}).get("bot")
                          == "bot-prom")

    page = rx.wait_for(pd("trigger"), 30)
    assert page is not None, f"no page within 30 s; got {[r[0] for r in rx.requests]}"
    arrived = time.monotonic() - t0
    body = page[1]
    assert body["routing_key"] == AM_ROUTING_KEY
    assert body["payload"]["severity"] == "critical"
    assert body["payload"]["summary"].startswith("ChatmonPIILeak bot=bot-prom tenant=acme")
    details = body["payload"]["custom_details"]
    assert details["bot"] == "bot-prom" and details["tenant"] == "acme"
    assert details["detector"] == "pii"
    assert "--bot bot-prom --detector pii" in details["evidence"]
    no_raw_pii(page)
    assert not [r for r in rx.requests if r[0] == "/am/slack"]  # page-only: not the channel
    resolved = rx.wait_for(pd("resolve"), PROM_WINDOW_S * 2 + 40)
    assert resolved is not None, "the page did not resolve"
    assert resolved[1]["dedup_key"] == body["dedup_key"]
    no_raw_pii(resolved)
    print(f"page after {arrived:.1f} s, resolved after {time.monotonic() - t0:.1f} s")


def test_embedded_webhooks_fire_and_resolve(stack: Stack):
    rx = stack.receiver

    def for_bot(path: str, status: str) -> Any:
        def match(r: Request) -> bool:
            return (r[0] == path and r[1].get("status") == status
                    and r[1]["labels"].get("bot") == "bot-emb")
        return match

    t0 = time.monotonic()
    post_leak(stack, "bot-emb", "e2e-emb-1")
    fired = rx.wait_for(for_bot("/embedded/json", "firing"), 30)
    assert fired is not None, f"no embedded alert; got {[r[0] for r in rx.requests]}"
    body = fired[1]
    assert body["rule"] == "ChatmonPIILeak" and body["severity"] == "page"
    assert body["labels"]["tenant"] == "acme" and body["labels"]["detector"] == "pii"
    assert body["counts"]["flagged_findings"] >= 1 and body["window_s"] == EMBEDDED_WINDOW_S
    assert {"conversation_id": "e2e-emb-1", "turn": 1, "label": "pii.leak"} in body["evidence"]
    no_raw_pii(fired)
    slack = rx.wait_for(lambda r: r[0] == f"/embedded/services/{SLACK_TOKEN}"
                        and "bot=bot-emb" in r[1]["blocks"][0]["text"]["text"], 10)
    assert slack is not None and "e2e-emb-1#1" in slack[1]["blocks"][0]["text"]["text"]
    pd = rx.wait_for(lambda r: r[0] == "/embedded/v2/enqueue"
                     and r[1].get("payload", {}).get("component") == "bot-emb", 10)
    assert pd is not None and pd[1]["routing_key"] == ROUTING_KEY
    assert pd[1]["event_action"] == "trigger"
    for req in (slack, pd):
        no_raw_pii(req)
    resolved = rx.wait_for(for_bot("/embedded/json", "resolved"), EMBEDDED_WINDOW_S + 15)
    assert resolved is not None and resolved[1]["fingerprint"] == body["fingerprint"]
    assert rx.wait_for(lambda r: r[0] == "/embedded/v2/enqueue"
                       and r[1].get("event_action") == "resolve"
                       and r[1]["dedup_key"] == pd[1]["dedup_key"], 10) is not None
    log = stack.chatmon_log.read_text()
    assert SLACK_TOKEN not in log and ROUTING_KEY not in log
    for value in LEAKED:
        assert value not in log
    print(f"embedded alert resolved after {time.monotonic() - t0:.1f} s")


CARD = "4111 1111 1111 1111"


def test_sensitive_echo_pages_through_prometheus_and_the_embedded_webhook(stack: Stack):
    """Issue 17.3: a full card number the bot repeats pages on both paths, without the value."""
    events = [
        {"conversation_id": "e2e-echo-1", "turn": 0, "role": "user", "bot_id": "bot-echo",
         "tenant": "acme", "ts": "2026-11-21T10:00:00Z",
         "text": f"I was charged twice on my card {CARD}."},
        {"conversation_id": "e2e-echo-1", "turn": 1, "role": "assistant", "bot_id": "bot-echo",
         "tenant": "acme", "ts": "2026-11-21T10:00:04Z",
         "text": f"I have refunded the duplicate charge on {CARD}"},
    ]
    req = urllib.request.Request(f"{stack.chatmon_url}/v1/turns", data=json.dumps(events).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.status == 200
    rx = stack.receiver
    page = rx.wait_for(lambda r: r[0] == "/am/pagerduty"
                       and r[1].get("payload", {}).get("summary", "").startswith(
                           "ChatmonSensitiveEcho bot=bot-echo tenant=acme"), 30)
    assert page is not None, f"no Prometheus page; got {[r[0] for r in rx.requests]}"
    assert page[1]["payload"]["severity"] == "critical"
    assert page[1]["payload"]["custom_details"]["detector"] == "pii"
    embedded = rx.wait_for(lambda r: r[0] == "/embedded/json"
                           and r[1].get("rule") == "ChatmonSensitiveEcho", 30)
    assert embedded is not None and embedded[1]["labels"]["bot"] == "bot-echo"
    assert embedded[1]["evidence"] == [{"conversation_id": "e2e-echo-1", "turn": 1,
                                        "label": "pii.sensitive_echo"}]
    leaks = [r for r in rx.requests if r[1].get("rule") == "ChatmonPIILeak"
             and r[1]["labels"].get("bot") == "bot-echo"]
    assert leaks == []  # the user gave the number: an echo, not a leak
    for r in (page, embedded):
        assert CARD not in r[2].decode() and CARD.replace(" ", "") not in r[2].decode()
    assert CARD not in stack.chatmon_log.read_text()
