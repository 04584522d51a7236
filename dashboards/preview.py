"""A static HTML preview of a dashboard's grid layout (titles, panel types, queries), for docs
and reviews without a Grafana server. ``tests/dashboards/test_dashboards_preview.py``
screenshots it in headless Chromium into ``docs/img/dashboard-<uid>.png``."""

from __future__ import annotations

from html import escape
from typing import Any

from dashboards.builder import GRID_COLUMNS

COLUMN_PX = 56
ROW_PX = 32


TITLE_LINES, LINE_PX, CHROME_PX = 2, 14, 62  # title lines; query line; padding, title, meta


def _summary(panel: dict[str, Any]) -> str:
    targets = panel.get("targets", [])
    if not targets:
        return ""
    first = targets[0]
    if "expr" in first:
        return "\n".join(t["expr"] for t in targets[:2])
    return " ".join(first["rawSql"].split())


def _swatches(panel: dict[str, Any]) -> str:
    """The panel's series colours (its default and its overrides), as small squares."""
    config = panel.get("fieldConfig", {})
    found = [("all series", config.get("defaults", {}).get("color"))]
    found += [(o["matcher"]["options"], p["value"]) for o in config.get("overrides", [])
              for p in o["properties"] if p["id"] == "color"]
    return "".join(f'<i style="background:{escape(c["fixedColor"])}" '
                   f'title="{escape(name)}: {escape(c["mode"])}"></i>'
                   for name, c in found if c and "fixedColor" in c)


def _panel(panel: dict[str, Any]) -> str:
    g = panel["gridPos"]
    style = (f"left:{100 * g['x'] / GRID_COLUMNS:.4f}%;top:{g['y'] * ROW_PX}px;"
             f"width:calc({100 * g['w'] / GRID_COLUMNS:.4f}% - 8px);height:{g['h'] * ROW_PX - 8}px")
    title = escape(panel["title"])
    if panel["type"] == "row":
        return f'<div class="row" style="{style}" title="{title}">{title}</div>'
    source = panel["datasource"]["type"].removeprefix("grafana-").removesuffix("-datasource")
    query = _summary(panel)
    lines = max(1, (g["h"] * ROW_PX - 8 - CHROME_PX) // LINE_PX)
    return (f'<div class="panel {panel["type"]}" data-id="{panel["id"]}" style="{style}">'
            f'<div class="title" title="{title}">{title}</div>'
            f'<div class="meta">{escape(panel["type"])} &middot; {escape(source)}'
            f'{_swatches(panel)}</div>'
            f'<div class="query" style="-webkit-line-clamp:{lines}" title="{escape(query)}">'
            f'{escape(query)}</div></div>')


def layout_html(dashboard: dict[str, Any]) -> str:
    """The grid as Grafana lays it out: 24 columns across the page's width, fixed row heights;
    below 769 px wide the panels stack in order, one per line, as on Grafana's phone view.
    Long titles and queries are cut with an ellipsis, the whole text on hover."""
    panels = dashboard["panels"]
    height = max(p["gridPos"]["y"] + p["gridPos"]["h"] for p in panels) * ROW_PX
    body = "\n".join(_panel(p) for p in panels)
    clamp = "display: -webkit-box; -webkit-box-orient: vertical; overflow: hidden;"
    return f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(dashboard["title"])} (layout)</title><style>
body {{ margin: 0; background: #111217; color: #d8d9da; font: 13px system-ui, sans-serif; }}
h1 {{ font-size: 18px; margin: 0; padding: 14px 16px 4px; }}
p.desc {{ margin: 0; padding: 0 16px 10px; color: #8e8e8e; }}
#grid {{ position: relative; margin: 0 12px 16px; height: {height}px; }}
.panel, .row {{ position: absolute; box-sizing: border-box; overflow: hidden; }}
.panel {{ background: #181b1f; border: 1px solid #2c3235; border-radius: 3px; padding: 6px 9px; }}
.row {{ font-weight: 600; font-size: 15px; padding-top: 6px; border-bottom: 1px solid #2c3235;
        white-space: nowrap; text-overflow: ellipsis; }}
.title {{ font-weight: 600; margin-bottom: 3px; line-height: 18px; {clamp}
          -webkit-line-clamp: {TITLE_LINES}; }}
.meta {{ color: #6e9fff; font-size: 11px; margin-bottom: 4px; }}
.meta i {{ display: inline-block; width: 9px; height: 9px; margin-left: 5px; }}
.query {{ color: #9fa7b3; font: 11px/{LINE_PX}px ui-monospace, monospace; white-space: pre-wrap;
          overflow-wrap: anywhere; {clamp} }}
.stat {{ border-top: 3px solid #73bf69; }} .table {{ border-top: 3px solid #8ab8ff; }}
.timeseries {{ border-top: 3px solid #f2cc0c; }} .bargauge {{ border-top: 3px solid #ff9830; }}
@media (max-width: 768px) {{
  #grid {{ height: auto; margin: 0 8px 16px; }}
  .panel, .row {{ position: static; width: auto !important; margin-bottom: 8px; }}
}}
</style></head><body>
<h1>{escape(dashboard["title"])}</h1><p class="desc">{escape(dashboard["description"])}</p>
<div id="grid">
{body}
</div></body></html>
"""
