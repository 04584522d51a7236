"""Container fixtures: the container runtime (podman, or docker with a daemon), set up by
``.ci/container-runtime`` as ``make test`` does, and the chatmon image built once per session
by ``deploy/build-image`` (``make image``), which reuses an image whose inputs' hash matches.

Skipped only where no container runtime can exist (not root, none installed, or no user
namespaces), saying why; a build that fails is a test error with the build's log."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.containers import IMAGE, ROOT, Runtime
from tests.kafka.conftest import kafka_bootstrap, names  # noqa: F401 (shared fixtures)

CANNOT_EXIST = 3  # .ci/container-runtime's exit code when no runtime can exist here
BUILD_TIMEOUT_S = 1800


@pytest.fixture(scope="session")
def runtime() -> Runtime:
    setup = subprocess.run([str(ROOT / ".ci" / "container-runtime")], capture_output=True,
                           text=True, timeout=900)
    if setup.returncode == CANNOT_EXIST:
        pytest.skip(f"no container runtime can exist here: {setup.stderr.strip()}")
    assert setup.returncode == 0, setup.stderr[-4000:]
    return Runtime(setup.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def image(runtime: Runtime, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """localhost/chatmon:latest, built (or found up to date) once per session."""
    log = tmp_path_factory.mktemp("image") / "build.log"
    with log.open("w") as fh:
        built = subprocess.run([str(ROOT / "deploy" / "build-image")], stdout=fh,
                               stderr=subprocess.STDOUT, timeout=BUILD_TIMEOUT_S)
    assert built.returncode == 0, log.read_text(errors="replace")[-6000:]
    yield IMAGE


@pytest.fixture
def containers(runtime: Runtime) -> Iterator[Runtime]:
    """The runtime, removing every container a test started when it ends."""
    yield runtime
    runtime.remove_started()


@pytest.fixture
def examples() -> Path:
    return ROOT / "examples"
