"""`chatmon models warm`: the enabled detectors loaded and run once, their ONNX exports written
to the cache under HOME (what an image build bakes in), and a second warm reuses them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def _warm(env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    out = subprocess.run([sys.executable, "-c", "from pipeline.cli import main; main()",
                          "models", "warm", "--json"], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_warm_exports_what_the_enabled_detectors_load_into_the_home_cache(
        tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path / "home"),
           "CHATMON_DETECTORS": json.dumps(["toxicity", "style"])}
    first = _warm(env)
    cache = tmp_path / "home" / ".cache" / "chatmon" / "onnx"
    assert first["onnx_cache_dir"] == str(cache)
    assert set(first["detectors"]) == {"toxicity", "style"}
    assert first["examples_scored"] > 0
    # toxicity's offline backend reads the shared MiniLM encoder: its int8 export is made now.
    assert [f for f in first["onnx_cache_files"] if f.startswith("minilm-")]
    assert sorted(p.name for p in cache.iterdir()) == first["onnx_cache_files"]
    mtimes = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    # A second warm only reads them (tests/deploy run it on the image's read-only cache).
    assert _warm(env)["onnx_cache_files"] == first["onnx_cache_files"]
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == mtimes
