"""A static HTML preview of a dashboard's grid layout (titles, panel types, queries), for docs
and reviews without a Grafana server. ``tests/dashboards/test_dashboards_preview.py``
screenshots it in headless Chromium into ``docs/img/dashboard-<uid>.png``."""

from __future__ import annotations

from html import escape
from typing import Any

COLUMN_PX = 56
ROW_PX = 32


def _summary(panel: dict[str, Any]) -> str:
    targets = panel.get("targets", [])
    if not targets:
        return ""
    first = targets[0]
    if "expr" in first:
        return "<br>".join(escape(t["expr"]) for t in targets[:2])
    sql = " ".join(first["rawSql"].split())
    return escape(sql[:220] + ("..." if len(sql) > 220 else ""))


def _panel(panel: dict[str, Any]) -> str:
    g = panel["gridPos"]
    style = (f"left:{g['x'] * COLUMN_PX}px;top:{g['y'] * ROW_PX}px;"
             f"width:{g['w'] * COLUMN_PX - 8}px;height:{g['h'] * ROW_PX - 8}px")
    if panel["type"] == "row":
        return f'<div class="row" style="{style}">{escape(panel["title"])}</div>'
    source = panel["datasource"]["type"].removeprefix("grafana-").removesuffix("-datasource")
    return (f'<div class="panel {panel["type"]}" data-id="{panel["id"]}" style="{style}">'
            f'<div class="title">{escape(panel["title"])}</div>'
            f'<div class="meta">{escape(panel["type"])} &middot; {escape(source)}</div>'
            f'<div class="query">{_summary(panel)}</div></div>')


def layout_html(dashboard: dict[str, Any]) -> str:
    panels = dashboard["panels"]
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels) * ROW_PX
    body = "\n".join(_panel(p) for p in panels)
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<title>{escape(dashboard["title"])} (layout)</title><style>
body {{ margin: 0; background: #111217; color: #d8d9da; font: 13px system-ui, sans-serif; }}
h1 {{ font-size: 18px; margin: 0; padding: 14px 16px 4px; }}
p.desc {{ margin: 0; padding: 0 16px 10px; color: #8e8e8e; }}
#grid {{ position: relative; margin: 0 12px 16px; width: {24 * COLUMN_PX}px;
         height: {height}px; }}
.panel, .row {{ position: absolute; box-sizing: border-box; overflow: hidden; }}
.panel {{ background: #181b1f; border: 1px solid #2c3235; border-radius: 3px; padding: 6px 9px; }}
.row {{ font-weight: 600; font-size: 15px; padding-top: 6px; border-bottom: 1px solid #2c3235; }}
.title {{ font-weight: 600; margin-bottom: 3px; }}
.meta {{ color: #6e9fff; font-size: 11px; margin-bottom: 4px; }}
.query {{ color: #9fa7b3; font: 11px ui-monospace, monospace; }}
.stat {{ border-top: 3px solid #73bf69; }} .table {{ border-top: 3px solid #8ab8ff; }}
.timeseries {{ border-top: 3px solid #f2cc0c; }} .bargauge {{ border-top: 3px solid #ff9830; }}
</style></head><body>
<h1>{escape(dashboard["title"])}</h1><p class="desc">{escape(dashboard["description"])}</p>
<div id="grid">
{body}
</div></body></html>
"""
