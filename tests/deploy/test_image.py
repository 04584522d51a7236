"""The chatmon image, run for real: offline batch scoring into SQLite (the same summary as
`make run`), no torch inside, `chatmon serve` storing posted turns in the host's PostgreSQL and
answering its HEALTHCHECK, and SIGTERM draining and exiting."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.containers import ROOT, Runtime, quantity_bytes
from tests.kafka.helpers import db_counts, free_port, wait_until

pytestmark = pytest.mark.container
# What differs between two runs of the same input: ids, timing, where the database is.
VOLATILE = {"run_id", "sources", "seconds", "turns_per_s", "database", "metrics_endpoint"}


def _summary(stdout: str) -> dict[str, Any]:
    return {k: v for k, v in json.loads(stdout).items() if k not in VOLATILE}


def test_image_scores_the_examples_offline_like_make_run(
        image: str, containers: Runtime, examples: Path, tmp_path: Path) -> None:
    args = containers.run_args(
        image, ["run", "--json", "--no-progress", "/data/transcripts.jsonl"],
        {"CHATMON_DATABASE_URL": "sqlite:////tmp/chatmon.db"},
        ["--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp",
         "--volume", f"{examples}:/data:ro"])
    in_container = containers(*args, timeout=600)
    summary = _summary(in_container.stdout)
    assert summary["turns_read"] == summary["turns_stored"] == 460
    assert summary["dead_lettered"] == 0 and summary["detector_errors"] == {}
    assert set(summary["findings"]) == {"bias", "empathy", "manipulation", "pii", "repetition",
                                        "style", "toxicity"}
    on_host = subprocess.run(
        [sys.executable, "-c", "from pipeline.cli import main; main()", "run", "--json",
         "--no-progress", "--database-url", f"sqlite:///{tmp_path / 'host.db'}",
         str(examples / "transcripts.jsonl")],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert on_host.returncode == 0, on_host.stderr[-3000:]
    assert summary == _summary(on_host.stdout)
    # Nothing on stderr but what a user should read: no library notices, no tracebacks.
    assert "Traceback" not in in_container.stderr
    assert "PyTorch was not found" not in in_container.stderr


def test_image_has_no_torch_runs_as_non_root_and_declares_a_healthcheck(
        image: str, containers: Runtime) -> None:
    probe = ("import importlib.util as u, os; "
             "print(u.find_spec('torch') is None, os.getuid())")
    out = containers(*containers.run_args(image, ["-c", probe], options=[
        "--rm", "--network", "none", "--entrypoint", "python"]))
    assert out.stdout.split() == ["True", "10001"]
    info = containers.inspect(image)
    assert info["Config"]["User"] == "10001"
    check = info.get("Healthcheck") or info["Config"].get("Healthcheck")  # podman / docker
    assert check["Test"][-2:] == ["python", "/opt/chatmon/healthcheck.py"]


def _post(port: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/turns",
                                 data=json.dumps(rows).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        return json.loads(resp.read())


def _health(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return json.loads(resp.read())
    except OSError:
        return None


@pytest.mark.postgres
def test_serve_in_a_container_stores_posted_turns_in_postgres_and_drains_on_sigterm(
        image: str, containers: Runtime, examples: Path, postgres_server_url: str) -> None:
    port = free_port()
    name = "chatmon-serve-test"
    args = containers.run_args(
        image, ["serve", "--host", "127.0.0.1", "--port", str(port)],
        {"CHATMON_DATABASE_URL": postgres_server_url},
        ["--detach", "--network", "host", "--read-only", "--tmpfs", "/tmp"], name=name)
    containers(*args)
    t0 = time.monotonic()
    health = wait_until(lambda: _health(port) or not _running(containers, name), 300,
                        "chatmon serve's /health")
    assert _running(containers, name), containers("logs", name).stderr[-3000:]
    assert health["status"] == "ok" and "pii" in health["detectors"]
    started_s = time.monotonic() - t0
    # The image's HEALTHCHECK finds serve's port.
    assert containers("healthcheck", "run", name, check=False).returncode == 0
    rows = [json.loads(line) for line in
            (examples / "transcripts.jsonl").read_text().splitlines()[:40]]
    result = _post(port, rows)
    assert result.get("errors", []) == [], result
    assert db_counts(postgres_server_url)["turns"] == 40
    # Every default detector loaded and scoring: within the Kubernetes worker's memory request.
    used = containers.memory_bytes(name)
    assert used < quantity_bytes(_worker_container()["resources"]["requests"]["memory"])
    # SIGTERM (podman stop): uvicorn drains and chatmon exits well inside the grace period;
    # uvicorn then re-raises the signal, so the status is 143 (128 + SIGTERM), not 137 (KILL).
    t0 = time.monotonic()
    containers("stop", "-t", "60", name, timeout=120)
    stop_s = time.monotonic() - t0
    state = containers.inspect(name)["State"]
    logs = containers("logs", name)
    assert state["ExitCode"] in (0, 143) and stop_s < 50, (state, logs.stderr[-3000:])
    assert "Traceback" not in logs.stdout + logs.stderr
    print(f"serve container: /health after {started_s:.1f} s, {used / 2**20:.0f} MiB after "
          f"scoring, stopped in {stop_s:.1f} s")


def _worker_container() -> dict[str, Any]:
    doc = yaml.safe_load((ROOT / "deploy" / "k8s" / "worker-deployment.yaml").read_text())
    (c,) = doc["spec"]["template"]["spec"]["containers"]
    return c


def _running(containers: Runtime, name: str) -> bool:
    out = containers("inspect", "--format", "{{.State.Running}}", name, check=False)
    return out.stdout.strip() == "true"
