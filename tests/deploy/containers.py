"""Helpers of the container tests: run, stop and kill containers of the chatmon image."""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.kafka.helpers import Worker

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "localhost/chatmon:latest"


class Runtime:
    """``podman`` or ``docker``; remembers the containers it started."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.started: list[str] = []

    def __call__(self, *args: str, timeout: float = 600,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run([self.name, *args], capture_output=True, text=True,
                             timeout=timeout)
        if check:
            assert out.returncode == 0, f"{self.name} {' '.join(args)}: {out.stderr[-3000:]}"
        return out

    def run_args(self, image: str, args: Sequence[str], env: dict[str, str] | None = None,
                 options: Sequence[str] = (), name: str | None = None) -> list[str]:
        """``run`` arguments for a container, always with an init process (SIGTERM reaches
        chatmon) and a name this object will remove."""
        name = name or f"chatmon-test-{uuid.uuid4().hex[:8]}"
        self.started.append(name)
        envs = [f"--env={k}={v}" for k, v in (env or {}).items()]
        return ["run", "--init", "--name", name, *envs, *options, image, *args]

    def inspect(self, name: str) -> dict[str, Any]:
        return json.loads(self("inspect", name).stdout)[0]

    def memory_bytes(self, name: str) -> float:
        """A running container's memory use (its cgroup's, as ``stats`` reports it)."""
        row = json.loads(self("stats", "--no-stream", "--format", "json", name).stdout)
        row = row[0] if isinstance(row, list) else row
        return parse_bytes((row.get("mem_usage") or row["MemUsage"]).split("/")[0])

    def remove_started(self) -> None:
        for name in self.started:
            self("rm", "-f", "-t", "0", name, check=False, timeout=60)
        self.started.clear()


class ContainerWorker(Worker):
    """``chatmon worker`` in a container of the image, on the host network (it reaches the
    test broker and PostgreSQL on loopback) with its own web port."""

    def __init__(self, runtime: Runtime, image: str, env: dict[str, str], log_dir: Path,
                 name: str) -> None:
        super().__init__(env, log_dir, name)
        self.runtime, self.image = runtime, image
        self.container = f"chatmon-worker-{name}-{uuid.uuid4().hex[:6]}"
        self.ready_s = 0.0  # container start to /ready answering

    def start(self, wait: bool = True) -> ContainerWorker:
        env = {k: v for k, v in self.env.items() if k.startswith("CHATMON_")}
        args = self.runtime.run_args(
            self.image, ["worker", "--no-migrate", "--web-host", "127.0.0.1",
                         "--web-port", str(self.port)],
            env, ["--rm", "--network", "host", "--read-only", "--tmpfs", "/tmp"],
            self.container)
        t0 = time.monotonic()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen([self.runtime.name, *args], stdout=log,
                                         stderr=subprocess.STDOUT)
        if wait:
            self.ready()
            self.ready_s = time.monotonic() - t0
        return self

    def memory_bytes(self) -> float:
        return self.runtime.memory_bytes(self.container)

    def kill(self) -> None:
        """SIGKILL to chatmon inside the container (no drain, no commit), as an OOM kill."""
        self.runtime("kill", "--signal", "KILL", self.container, check=False)
        assert self.proc is not None
        self.proc.wait(60)

    def stop(self) -> None:
        if self.alive():
            self.runtime("stop", "-t", "30", self.container, check=False, timeout=90)
            assert self.proc is not None
            self.proc.wait(60)


def parse_bytes(text: str) -> float:
    """'1.995MB' or '812.3MiB' (podman's and docker's stats) as bytes."""
    m = re.fullmatch(r"\s*([\d.]+)\s*([kKMGT]?i?B)\s*", text)
    assert m, text
    unit = m.group(2)
    power = " KMGT".index(unit[0].upper()) if unit[0] != "B" else 0
    return float(m.group(1)) * (1024 if "i" in unit else 1000) ** power


def quantity_bytes(q: str) -> float:
    """A Kubernetes memory quantity ('2Gi', '512Mi', '4G') as bytes."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]i?)?", q)
    assert m, q
    unit = m.group(2) or ""
    power = " KMGT".index(unit[0]) if unit else 0
    return float(m.group(1)) * (1024 if unit.endswith("i") else 1000) ** power
