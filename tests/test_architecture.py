"""detectors/ is pure: importing any detector module pulls in no I/O framework or pipeline code,
and no detector source reads the environment."""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import detectors

FORBIDDEN = ("faust", "kafka", "aiokafka", "sqlalchemy", "prometheus_client", "pipeline",
             "starlette", "uvicorn", "psycopg", "grafana_client")
DETECTORS_DIR = Path(detectors.__file__).parent


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.walk_packages([str(DETECTORS_DIR)], "detectors."))


def test_detector_modules_import_no_io_frameworks() -> None:
    code = (
        "import importlib, sys, json\n"
        f"mods = {_modules()!r}\n"
        "for m in mods: importlib.import_module(m)\n"
        f"bad = sorted({{n.split('.')[0] for n in sys.modules}} & set({FORBIDDEN!r}))\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_detectors_never_read_the_environment() -> None:
    pattern = re.compile(r"\bos\.environ\b|\bos\.getenv\b|\bgetenv\(")
    offenders = [str(p) for p in DETECTORS_DIR.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []
