"""Grafana dashboards as code: small typed builders (:mod:`dashboards.builder`), the panel SQL
(:mod:`dashboards.queries`), the two dashboards (:mod:`dashboards.oncall`,
:mod:`dashboards.weekly`) and :func:`render_all`, which writes one deterministic JSON file per
dashboard. ``dashboards/generated/`` holds the committed output; a test re-renders and compares.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

GENERATED = Path(__file__).resolve().parent / "generated"


def builders() -> dict[str, Callable[[], dict[str, Any]]]:
    """File stem -> the function that builds that dashboard."""
    from dashboards import oncall, weekly

    return {"chatmon-oncall": oncall.build, "chatmon-weekly-quality": weekly.build}


def to_json(dashboard: dict[str, Any]) -> str:
    """The one serialisation: stable key order, two-space indent, trailing newline."""
    return json.dumps(dashboard, indent=2, ensure_ascii=False) + "\n"


def render_all(out: Path) -> list[Path]:
    """Write ``<stem>.json`` for every dashboard into ``out``; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, build in builders().items():
        path = out / f"{stem}.json"
        path.write_text(to_json(build()), encoding="utf-8")
        paths.append(path)
    return paths
