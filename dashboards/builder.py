"""Typed builders for Grafana dashboard JSON (schemaVersion 39), in the spirit of grafana
foundation-sdk's Python builders but without the dependency: each function returns plain dicts
in a fixed key order, so the rendered JSON is byte-for-byte deterministic.

Layout is automatic: :func:`dashboard` places panels left to right on Grafana's 24-column grid
and wraps; a :func:`row` starts a new full-width line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from dashboards import palette

SCHEMA_VERSION = 39
GRID_COLUMNS = 24

Json = dict[str, Any]
Kind = Literal["time", "number", "string", "bool"]


@dataclass(frozen=True)
class Datasource:
    type: str
    uid: str

    def ref(self) -> Json:
        return {"type": self.type, "uid": self.uid}


# The uids provisioned in deploy/grafana/provisioning/datasources/chatmon.yml (and by `push`).
PROMETHEUS = Datasource("prometheus", "chatmon-prometheus")
POSTGRES = Datasource("grafana-postgresql-datasource", "chatmon-postgres")


@dataclass(frozen=True)
class PromQuery:
    expr: str
    legend: str = ""

    def target(self, ref_id: str) -> Json:
        return {"refId": ref_id, "datasource": PROMETHEUS.ref(), "expr": self.expr,
                "legendFormat": self.legend, "range": True}


@dataclass(frozen=True)
class SqlQuery:
    """A PostgreSQL-dialect panel query with the Grafana macro ``$__timeFilter(col)``, and the
    columns (name, kind) the panel expects back; tests execute every one of them."""

    sql: str
    columns: tuple[tuple[str, Kind], ...]
    format: Literal["time_series", "table"] = "table"

    def target(self, ref_id: str) -> Json:
        return {"refId": ref_id, "datasource": POSTGRES.ref(), "editorMode": "code",
                "format": self.format, "rawQuery": True, "rawSql": self.sql.strip()}


Query = PromQuery | SqlQuery


@dataclass(frozen=True)
class Panel:
    type: str
    title: str
    queries: tuple[Query, ...] = ()
    description: str = ""
    width: int = 12
    height: int = 8
    unit: str = "short"
    options: Json = field(default_factory=dict)
    field_config: Json = field(default_factory=dict)
    overrides: tuple[Json, ...] = ()
    transformations: tuple[Json, ...] = ()


def shades(colour: str) -> Json:
    """Every series in a shade of ``colour`` (one signal, many bots)."""
    return {"mode": "shades", "fixedColor": colour}


def fixed(colour: str) -> Json:
    return {"mode": "fixed", "fixedColor": colour}


def colour_override(matcher: Literal["byName", "byRegexp"], pattern: str, colour: Json) -> Json:
    """The series whose display name matches ``pattern`` drawn in ``colour``."""
    return {"matcher": {"id": matcher, "options": pattern},
            "properties": [{"id": "color", "value": colour}]}


def signal_colours(matcher: Literal["byName", "byRegexp"] = "byName",
                   pattern: str = "{signal}", colour: Callable[[str], Json] = fixed
                   ) -> tuple[Json, ...]:
    """One override per signal (:mod:`dashboards.palette`): the series named after it (or
    matching ``pattern`` with ``{signal}`` filled in) in its colour, as in the report."""
    return tuple(colour_override(matcher, pattern.format(signal=name), colour(hex_))
                 for name, hex_ in palette.SIGNAL.items())


def timeseries(title: str, *queries: Query, unit: str = "short", description: str = "",
               width: int = 12, height: int = 8, bars: bool = False, colour: Json | None = None,
               overrides: tuple[Json, ...] = ()) -> Panel:
    custom: Json = {"drawStyle": "bars" if bars else "line", "lineWidth": 2, "fillOpacity": 10,
                    "showPoints": "always" if bars is False else "never", "spanNulls": True}
    return Panel("timeseries", title, queries, description, width, height, unit,
                 options={"legend": {"displayMode": "table", "placement": "bottom",
                                     "calcs": ["mean", "lastNotNull"]},
                          "tooltip": {"mode": "multi", "sort": "desc"}},
                 field_config={"custom": custom, **({"color": colour} if colour else {})},
                 overrides=overrides)


def table(title: str, query: Query, *, unit: str = "short", description: str = "",
          width: int = 12, height: int = 8, overrides: tuple[Json, ...] = ()) -> Panel:
    return Panel("table", title, (query,), description, width, height, unit,
                 options={"showHeader": True, "cellHeight": "sm"}, overrides=overrides)


def stat(title: str, query: Query, *, unit: str = "short", description: str = "",
         width: int = 6, height: int = 4, red_above: float | None = None) -> Panel:
    steps: list[Json] = [{"color": "green", "value": None}]
    if red_above is not None:
        steps.append({"color": "red", "value": red_above})
    return Panel("stat", title, (query,), description, width, height, unit,
                 options={"reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                            "values": False},
                          "colorMode": "background", "graphMode": "none"},
                 field_config={"thresholds": {"mode": "absolute", "steps": steps}})


def bar_gauge(title: str, query: Query, *, unit: str = "percentunit", description: str = "",
              width: int = 12, height: int = 8, colour: Json | None = None) -> Panel:
    return Panel("bargauge", title, (query,), description, width, height, unit,
                 options={"displayMode": "basic", "orientation": "horizontal",
                          "reduceOptions": {"calcs": ["lastNotNull"], "fields": "",
                                            "values": True}},
                 field_config={"color": colour} if colour else {})


def row(title: str) -> Panel:
    return Panel("row", title, width=GRID_COLUMNS, height=1)


def link_column(column: str, title: str, url: str) -> Json:
    """A table override that turns ``column``'s cells into links (``${__value.raw}`` is the
    cell's value)."""
    return {"matcher": {"id": "byName", "options": column},
            "properties": [{"id": "links", "value": [{"title": title, "url": url}]}]}


def textbox_variable(name: str, label: str, default: str = "") -> Json:
    return {"type": "textbox", "name": name, "label": label, "query": default,
            "current": {"text": default, "value": default}, "hide": 0}


def _panel_json(panel: Panel, panel_id: int, pos: Json, default: Datasource) -> Json:
    if panel.type == "row":  # datasource and targets too: tools that walk panels expect them
        return {"id": panel_id, "type": "row", "title": panel.title, "collapsed": False,
                "datasource": default.ref(), "gridPos": pos, "panels": [], "targets": []}
    first = panel.queries[0]
    source = PROMETHEUS if isinstance(first, PromQuery) else POSTGRES
    defaults: Json = {"unit": panel.unit, **panel.field_config}
    out: Json = {"id": panel_id, "type": panel.type, "title": panel.title,
                 "description": panel.description, "datasource": source.ref(), "gridPos": pos,
                 "fieldConfig": {"defaults": defaults, "overrides": list(panel.overrides)},
                 "options": panel.options,
                 "targets": [q.target(chr(ord("A") + i)) for i, q in enumerate(panel.queries)]}
    if panel.transformations:
        out["transformations"] = list(panel.transformations)
    return out


def layout(panels: list[Panel], default: Datasource) -> list[Json]:
    """Grid positions: left to right, wrapping at 24 columns; rows take a line of their own."""
    out: list[Json] = []
    x = y = line_height = 0
    for i, panel in enumerate(panels, start=1):
        if panel.type == "row" or x + panel.width > GRID_COLUMNS:
            y, x, line_height = y + line_height, 0, 0
        pos = {"h": panel.height, "w": panel.width, "x": x, "y": y}
        out.append(_panel_json(panel, i, pos, default))
        x += panel.width
        line_height = max(line_height, panel.height)
        if panel.type == "row":
            y, x, line_height = y + panel.height, 0, 0
    return out


def dashboard(uid: str, title: str, panels: list[Panel], *, description: str,
              default_source: Datasource,
              time_from: str = "now-6h", refresh: str = "", tags: tuple[str, ...] = ("chatmon",),
              variables: tuple[Json, ...] = (), links: tuple[Json, ...] = ()) -> Json:
    return {"uid": uid, "title": title, "description": description, "tags": list(tags),
            "timezone": "utc", "schemaVersion": SCHEMA_VERSION, "version": 1, "editable": True,
            "graphTooltip": 1, "time": {"from": time_from, "to": "now"}, "refresh": refresh,
            "templating": {"list": list(variables)}, "links": list(links),
            "panels": layout(panels, default_source)}


def sql_queries(dash: Json) -> list[tuple[str, str]]:
    """(panel title, rawSql) for every SQL target of a rendered dashboard."""
    return [(p["title"], t["rawSql"]) for p in dash["panels"] for t in p.get("targets", [])
            if "rawSql" in t]
