"""The image built with Detoxify weights baked in (``make image DETOXIFY=original``), from a
local model folder in the build context: a tiny randomly initialised checkpoint in the published
layout (tests/detectors/test_toxicity_detoxify.py), since no real weights can be fetched here.
The build exports it to int8 ONNX; the image, without torch, read-only and offline, loads it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.deploy.containers import ROOT, Runtime

pytestmark = [pytest.mark.container, pytest.mark.slow]
IMAGE = "localhost/chatmon:test-detoxify"
# What deploy/Dockerfile copies from the build context, and the scripts that build it.
CONTEXT = ("pyproject.toml", "constraints.txt", "README.md", ".dockerignore", "pipeline",
           "detectors", "dashboards", "migrations", "deploy/Dockerfile", "deploy/build-image",
           "deploy/image-constraints.txt", "deploy/requirements.py", "deploy/healthcheck.py",
           "deploy/local", ".ci/container-runtime")


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _context(dest: Path) -> Path:
    """A copy of the build context (hard links where it can), with deploy/models of its own."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for rel in CONTEXT:
        src, dst = ROOT / rel, dest / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=ignore, copy_function=_link_or_copy)
        else:
            shutil.copy2(src, dst)
    return dest


@pytest.fixture(scope="module")
def detoxify_image(image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.detectors.test_toxicity_detoxify import build_tiny_detoxify

    ctx = _context(tmp_path_factory.mktemp("context"))
    build_tiny_detoxify(ctx / "deploy" / "models")
    built = subprocess.run([str(ctx / "deploy" / "build-image")], capture_output=True,
                           text=True, timeout=1800,
                           env={**os.environ, "IMAGE": IMAGE, "DETOXIFY": "original"})
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-2000:]
    return IMAGE


def test_detoxify_weights_baked_in_run_as_int8_onnx_without_torch(
        detoxify_image: str, containers: Runtime) -> None:
    args = containers.run_args(detoxify_image, ["models", "warm", "--json"], options=[
        "--rm", "--network", "none", "--read-only", "--tmpfs", "/tmp"])
    out = json.loads(containers(*args).stdout)
    # The build's config switched the toxicity detector to the baked checkpoint, run by ONNX
    # Runtime from the export the build made (no torch in the image to make another).
    assert out["detectors"]["toxicity"] == "detoxify-original-int8@tiny-test"
    assert any(f.startswith("detoxify-original-") for f in out["onnx_cache_files"])
    assert out["examples_scored"] > 0
    probe = "import importlib.util as u; print(u.find_spec('torch') is None)"
    no_torch = containers(*containers.run_args(detoxify_image, ["-c", probe], options=[
        "--rm", "--network", "none", "--entrypoint", "python"]))
    assert no_torch.stdout.strip() == "True"
