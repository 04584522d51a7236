"""deploy/compose.yaml started for real by podman-compose, every image built here: the bundled
examples produced into the broker are stored in the stack's PostgreSQL by the two workers,
Prometheus scrapes their metrics, and a chatmon alert fires and reaches Alertmanager."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.containers import ROOT, Runtime
from tests.kafka.helpers import free_port, wait_until

pytestmark = [pytest.mark.container, pytest.mark.slow]
COMPOSE_FILE = ROOT / "deploy" / "compose.yaml"
EXAMPLE_TURNS = 460
PORTS = ("POSTGRES_PORT", "WORKER0_PORT", "WORKER1_PORT", "SERVE_PORT", "PROMETHEUS_PORT",
         "ALERTMANAGER_PORT")


class Stack:
    def __init__(self, project: str, log: Path) -> None:
        self.project = project
        self.log = log
        self.env = {**os.environ, "POSTGRES_PASSWORD": uuid.uuid4().hex,
                    **{name: str(free_port()) for name in PORTS}}
        compose = shutil.which("podman-compose") or str(Path(sys.executable).parent
                                                         / "podman-compose")
        self.compose = [compose, "-p", project, "-f", str(COMPOSE_FILE)]

    def __call__(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        out = subprocess.run([*self.compose, *args], env=self.env, capture_output=True,
                             text=True, timeout=timeout, cwd=ROOT)
        with self.log.open("a") as fh:
            fh.write(f"$ compose {' '.join(args)}\n{out.stdout}\n{out.stderr}\n")
        return out

    def url(self, port: str, path: str) -> str:
        return f"http://127.0.0.1:{self.env[port]}{path}"

    @property
    def database_url(self) -> str:
        return (f"postgresql+psycopg://chatmon:{self.env['POSTGRES_PASSWORD']}@127.0.0.1:"
                f"{self.env['POSTGRES_PORT']}/chatmon")


@pytest.fixture
def stack(image: str, runtime: Runtime, tmp_path: Path) -> Iterator[Stack]:
    if runtime.name != "podman":
        pytest.skip("this test drives podman-compose; docker compose runs the same file")
    built = subprocess.run([str(ROOT / "deploy" / "build-image"), "--stack"],
                           capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    s = Stack(f"chatmon-test-{uuid.uuid4().hex[:8]}", tmp_path / "compose.log")
    try:
        yield s
    finally:
        s("down", "-v", "-t", "10", timeout=300)


def _get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def _stored(database_url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("select count(*) from turns")).scalar_one())
    except Exception:  # not migrated or not up yet
        return -1
    finally:
        engine.dispose()


def _firing(stack: Stack) -> set[str]:
    body = _get(stack.url("PROMETHEUS_PORT", "/api/v1/alerts")) or {}
    return {a["labels"]["alertname"] for a in body.get("data", {}).get("alerts", [])
            if a["state"] == "firing" and a["labels"].get("source") == "chatmon"}


def test_compose_stack_stores_the_examples_and_fires_an_alert(stack: Stack) -> None:
    up = stack("up", "-d")
    assert up.returncode == 0, stack.log.read_text()[-4000:]
    for port in ("WORKER0_PORT", "WORKER1_PORT"):
        wait_until(lambda p=port: _get(stack.url(p, "/ready")) is not None, 600,
                   f"the worker on {port} to be ready")
    produced = stack("--profile", "examples", "run", "--rm", "chatmon-produce")
    assert produced.returncode == 0, stack.log.read_text()[-4000:]
    wait_until(lambda: _stored(stack.database_url) >= EXAMPLE_TURNS, 600,
               "the example turns in the stack's PostgreSQL")
    assert _stored(stack.database_url) == EXAMPLE_TURNS
    # Prometheus scrapes both workers (the compose service names) and holds chatmon's metrics.
    query = "sum(chatmon_turns_processed_total)"
    wait_until(lambda: _metric(stack, query) >= EXAMPLE_TURNS, 180,
               f"{query} in Prometheus")
    targets = _get(stack.url("PROMETHEUS_PORT", "/api/v1/targets"))["data"]["activeTargets"]
    up_workers = {t["labels"]["instance"] for t in targets
                  if t["labels"]["job"] == "chatmon-worker" and t["health"] == "up"}
    assert up_workers == {"chatmon-worker-0:6066", "chatmon-worker-1:6066"}
    # The examples hold flagged PII leaks: the rule fires and Alertmanager receives it.
    firing = wait_until(lambda: _firing(stack), 240, "a chatmon alert firing")
    assert "ChatmonPIILeak" in firing
    wait_until(lambda: {a["labels"]["alertname"] for a in
                        _get(stack.url("ALERTMANAGER_PORT", "/api/v2/alerts")) or []}
               & firing, 120, "the alert in Alertmanager")


def _metric(stack: Stack, query: str) -> float:
    from urllib.parse import quote

    body = _get(stack.url("PROMETHEUS_PORT", f"/api/v1/query?query={quote(query)}")) or {}
    result = body.get("data", {}).get("result", [])
    return float(result[0]["value"][1]) if result else 0.0
