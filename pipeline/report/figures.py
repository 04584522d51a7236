"""The plotly figures of ``chatmon report``: estimates in, figure out.

Comparisons are dots with their interval (:mod:`pipeline.report.estimates`): this week in the
signal's colour, the week before in a lighter tint of it, and a dark ring around this week's dot
where the change is larger than chance (its interval excludes 0). Colours come from
:mod:`dashboards.palette`; layout rules from :mod:`pipeline.report.layout`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from dashboards import palette
from pipeline.report import layout as lay
from pipeline.report.estimates import Groups, Row

Rows = list[dict[str, Any]]
SYMBOLS = {"er": "circle", "ip": "square", "ex": "diamond"}
DASHES = ("solid", "dash", "dot", "dashdot")  # series of one colour told apart
MECHANISM_NAMES = {"er": "emotional reactions", "ip": "interpretations", "ex": "explorations",
                   "alignment": "emotion alignment"}


@dataclass(frozen=True)
class Scale:
    """How a value is shown: multiplied by ``factor``, printed with ``fmt``."""

    factor: float
    fmt: str
    axis: dict[str, Any]

    def text(self, value: float | None, sign: bool = False) -> str:
        if value is None:
            return "-"
        return format(value * self.factor, ("+" if sign else "") + self.fmt)

    def interval(self, e: dict[str, Any], sign: bool = False) -> str:
        return (f"{self.text(e['value'], sign)} [{self.text(e['low'], sign)}, "
                f"{self.text(e['high'], sign)}]")


MEAN = Scale(1, ".3f", {"rangemode": "tozero"})
LEVEL = Scale(1, ".2f", {"range": [0, 2.05], "dtick": 1})
PER_1000 = Scale(1000, ".1f", {"rangemode": "tozero"})
SHARE = Scale(100, ".1f", {"rangemode": "tozero", "ticksuffix": "%"})


def _error(rows: Sequence[dict[str, Any] | None], scale: Scale, colour: str) -> dict[str, Any]:
    def side(e: dict[str, Any] | None, a: str, b: str) -> float | None:
        return None if e is None or e[a] is None else (e[a] - e[b]) * scale.factor
    return {"type": "data", "symmetric": False, "color": colour, "thickness": 1.5, "width": 3,
            "array": [side(e, "high", "value") for e in rows],
            "arrayminus": [side(e, "value", "low") for e in rows]}


def _x(rows: Sequence[dict[str, Any] | None], scale: Scale) -> list[float | None]:
    return [None if e is None or e["value"] is None else e["value"] * scale.factor
            for e in rows]


def _hover(row: Row, scale: Scale, now: str, before: str) -> str:
    lines = [row.key, f"{now}: {scale.interval(row.now)}, n={row.now['n']}"]
    if row.before is not None:
        lines.append(f"{before}: {scale.interval(row.before)}, n={row.before['n']}")
    if row.change is not None:
        verdict = "larger than chance" if row.significant else "within chance"
        lines.append(f"difference: {scale.interval(row.change, sign=True)} ({verdict})")
    return "<br>".join(lines)


def paired(groups: Groups, signal: str, scale: Scale, axis_title: str,
           now: str = "this week", before: str = "the week before") -> go.Figure:
    """Per group, this week's estimate and the week before's, each with its interval."""
    rows = groups.rows
    labels = lay.abbreviate([r.key for r in rows])
    solid = palette.colour(signal)
    light = palette.lighter(solid)
    hover = [_hover(r, scale, now, before) for r in rows]
    common = {"y": labels, "mode": "markers", "orientation": "h", "hovertext": hover,
              "hoverinfo": "text", "cliponaxis": False}
    traces = [
        go.Scatter(x=_x([r.now for r in rows], scale), name=now,
                   error_x=_error([r.now for r in rows], scale, solid),
                   marker={"color": solid, "size": 9, "line": {
                       "color": palette.INK, "width": [2.5 if r.significant else 0
                                                       for r in rows]}}, **common),
        go.Scatter(x=_x([r.before for r in rows], scale), name=before,
                   error_x=_error([r.before for r in rows], scale, light),
                   marker={"color": light, "size": 9, "line": {"color": solid, "width": 1}},
                   **common),
    ]
    return lay.figure(traces, len(rows), scattermode="group", scattergap=0.4,
                      yaxis=lay.category_axis(labels),
                      xaxis={"title": {"text": axis_title}, **scale.axis})


def gap(groups: Groups) -> go.Figure:
    """Per user group: its replies' empathy minus the bot's other replies', with the interval;
    filled where the interval excludes 0."""
    rows = sorted(groups.rows, key=lambda r: (r.change or {}).get("value") or 0.0)  # coldest first
    parts = [r.key.rsplit(" · ", 1) for r in rows]  # group (category), bot
    labels = lay.label_with_bot([p[0] for p in parts], [p[-1] for p in parts])
    traces = []
    for significant, name in ((True, "interval excludes 0"), (False, "within chance")):
        keep = [i for i, r in enumerate(rows) if r.significant == significant]
        colour = palette.SIGNAL["empathy"] if significant else palette.NEUTRAL
        changes = [rows[i].change for i in keep]
        traces.append(go.Scatter(
            x=_x(changes, MEAN), y=[labels[i] for i in keep], name=name, mode="markers",
            error_x=_error(changes, MEAN, colour), hoverinfo="text", cliponaxis=False,
            hovertext=[_hover(rows[i], MEAN, "replies to the group", "the bot's other replies")
                       for i in keep],
            marker={"size": 9, "color": colour if significant else "#FFFFFF",
                    "line": {"color": colour, "width": 1.5}}))
    return lay.figure(traces, len(rows), row_px=24, yaxis=lay.category_axis(labels),
                      xaxis={"title": {"text": "gap in empathy.score"},
                             "zeroline": True, "zerolinecolor": palette.NEUTRAL,
                             "zerolinewidth": 1.5})


def mechanisms(groups: dict[str, Groups]) -> go.Figure:
    """Per bot and model, this window's mean EPITOME levels (0-2: ER, IP, EX side by side) and,
    in a column of its own, emotion alignment (0-1), each with its interval."""
    from plotly.subplots import make_subplots

    keys = sorted({r.key for g in groups.values() for r in g.rows})
    labels = dict(zip(keys, lay.abbreviate(keys), strict=True))
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.62, 0.38],
                        horizontal_spacing=0.08)
    colour = palette.SIGNAL["empathy"]
    for name, g in groups.items():
        scale, col = (MEAN, 2) if name == "alignment" else (LEVEL, 1)
        fig.add_trace(go.Scatter(
            x=_x([r.now for r in g.rows], scale), y=[labels[r.key] for r in g.rows],
            mode="markers", name=name.upper() if col == 1 else "alignment", orientation="h",
            showlegend=col == 1, error_x=_error([r.now for r in g.rows], scale, colour),
            marker={"color": colour if col == 2 else "#FFFFFF", "size": 8,
                    "symbol": SYMBOLS.get(name, "circle"), "line": {"color": colour, "width": 1.5}},
            hoverinfo="text", cliponaxis=False,
            hovertext=[f"{r.key}<br>{MECHANISM_NAMES[name]}: {scale.interval(r.now)}, "
                       f"n={r.now['n']}" for r in g.rows]), row=1, col=col)
    fig.update_xaxes(title={"text": "level (0-2)"}, automargin=True, **LEVEL.axis, row=1, col=1)
    fig.update_xaxes(title={"text": "alignment"}, automargin=True, range=[0, 1.02],
                     tickvals=[0, 0.5, 1], row=1, col=2)
    base = lay.figure([], len(keys), row_px=36, scattermode="group", scattergap=0.3,
                      yaxis=lay.category_axis(list(labels.values())))
    fig.update_layout(base.layout)
    return fig


def empathy_weeks(rows: Rows, min_replies: int) -> go.Figure:
    """A bot/model x ISO-week heatmap of mean empathy; cells under the minimum left blank."""
    keys = sorted({f"{r['bot']} / {r['model']}" for r in rows})
    weeks = sorted({str(r["time"])[:10] for r in rows})
    cell = {(f"{r['bot']} / {r['model']}", str(r["time"])[:10]): r for r in rows}
    z, hover = [], []
    for key in keys:
        zs, hs = [], []
        for week in weeks:
            r = cell.get((key, week))
            n = int(r["replies"]) if r else 0
            value = float(r["empathy"]) if r and r["empathy"] is not None else None
            shown = value is not None and n >= min_replies
            zs.append(value if shown else None)
            hs.append(f"{key}<br>week of {week}<br>" + (
                f"mean empathy {value:.3f}, n={n}" if shown else f"too few replies (n={n})"))
        z.append(zs)
        hover.append(hs)
    labels = lay.abbreviate(keys)
    ticks = [w[5:] for w in weeks]  # MM-DD; the year is in the hover
    trace = go.Heatmap(z=z, x=ticks, y=labels, hovertext=hover, hoverinfo="text", xgap=2, ygap=2,
                       zmin=0, zmax=1, colorscale=palette.EMPATHY_SCALE,
                       colorbar={"thickness": 10, "len": 1, "lenmode": "fraction",
                                 "tickvals": [0, 0.5, 1], "outlinewidth": 0})
    return lay.figure([trace], len(keys), row_px=24, legend=False,
                      yaxis=lay.category_axis(labels),
                      xaxis={"type": "category", "title": {"text": "week starting (MM-DD)"},
                             "side": "bottom"})


def ranked(rows: Rows, text: str, signal: str) -> go.Figure:
    """The top rows as horizontal bars of their ``share``, labelled by their ``text`` column
    and bot (stock phrases, tactic sequences)."""
    rows = rows[:10]
    names = [f"{r[text]} · {r['bot']}" for r in rows]
    labels = lay.label_with_bot([str(r[text]) for r in rows], [str(r["bot"]) for r in rows])
    shares = [float(r["share"] or 0) for r in rows]
    trace = go.Bar(x=shares, y=labels, orientation="h", marker={"color": palette.colour(signal)},
                   text=[f"{s:.0%}" for s in shares], textposition="outside", cliponaxis=False,
                   hovertext=[f"{n}<br>{s:.1%} of the bot's recent replies"
                              for n, s in zip(names, shares, strict=True)], hoverinfo="text")
    return lay.figure([trace], len(rows), row_px=24, legend=False,
                      yaxis=lay.category_axis(labels),
                      xaxis={"range": [0, max(shares, default=0) * 1.2 + 0.12],
                             "tickvals": [0, 0.25, 0.5, 0.75, 1], "tickformat": ".0%",
                             "title": {"text": "share of replies"}})


def judge_agreement(rows: Rows, min_replies: int) -> go.Figure:
    """chatmon judge against the classifiers: quadratic-weighted kappa on the rubric's scale per
    week, one line per judge label and model (rows of dashboards.queries.JUDGE_AGREEMENT_WEEKLY);
    a week with fewer judged replies than the minimum is left out of its line."""
    series: dict[str, tuple[list[str], list[float | None], list[str]]] = {}
    for r in rows:
        xs, ys, notes = series.setdefault(r["metric"], ([], [], []))
        n = int(r["n"])
        xs.append(str(r["time"])[5:10])
        ys.append(float(r["kappa"]) if r["kappa"] is not None and n >= min_replies else None)
        notes.append(f"{r['metric']}<br>week of {str(r['time'])[:10]}: " + (
            f"kappa {float(r['kappa']):.2f}, agreement {float(r['agreement']):.0%}, n={n}"
            if ys[-1] is not None else f"too few judged replies (n={n})"))
    names = lay.abbreviate(list(series))
    traces = []
    for i, (name, metric, (xs, ys, notes)) in enumerate(zip(names, series, series.values(),
                                                           strict=True)):
        colour = _judged_signal_colour(metric)
        traces.append(go.Scatter(
            x=xs, y=ys, name=name, mode="lines+markers", hovertext=notes, hoverinfo="text",
            line={"color": colour, "dash": DASHES[i % len(DASHES)]},
            marker={"color": colour, "symbol": list(SYMBOLS.values())[i % len(SYMBOLS)]}))
    return lay.figure(traces, 6, yaxis={"range": [-0.2, 1.05], "title": {"text": "kappa"}},
                      xaxis={"type": "category", "title": {"text": "week starting (MM-DD)"}})


def _judged_signal_colour(metric: str) -> str:
    """The colour of the signal a judge rubric rates (``judge.epitome_er / model`` rates
    empathy); neutral for a rubric of no signal."""
    rubric = metric.split(" / ", 1)[0].removeprefix("judge.")
    signal = "empathy" if rubric.startswith("epitome") else rubric.split("_", 1)[0]
    return palette.SIGNAL.get(signal, palette.NEUTRAL)
