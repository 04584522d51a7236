"""The plotly figures of ``chatmon report`` (one function per plot; rows in, figure out)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

Rows = list[dict[str, Any]]
HARMS = ("toxicity", "bias", "manipulation", "pii")
LAYOUT: dict[str, Any] = {"template": "plotly_white", "height": 340,
                          "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
                          "legend": {"orientation": "h", "y": -0.2}}


def _fig(title: str, traces: list[Any], **layout: Any) -> go.Figure:
    fig = go.Figure(traces)
    fig.update_layout(title=title, **{**LAYOUT, **layout})
    return fig


def _f(value: Any) -> float:
    return float(value) if value is not None else 0.0


def empathy_trend(rows: Rows) -> go.Figure:
    series: dict[str, tuple[list[str], list[float]]] = {}
    for r in rows:
        xs, ys = series.setdefault(r["metric"], ([], []))
        xs.append(str(r["time"])[:10])
        ys.append(_f(r["empathy"]))
    traces = [go.Scatter(x=xs, y=ys, name=name, mode="lines+markers")
              for name, (xs, ys) in series.items()]
    return _fig("Empathy per bot and model (weekly mean)", traces,
                yaxis={"range": [0, 1], "title": "empathy.score"}, xaxis={"type": "category"})


def mechanisms(rows: Rows) -> go.Figure:
    names = [f"{r['bot']} / {r['model']}" for r in rows]
    parts = (("emotional_reactions", "emotional reactions"), ("interpretations", "interpretations"),
             ("explorations", "explorations"))
    traces: list[Any] = [go.Bar(x=names, y=[_f(r[k]) for r in rows], name=label)
                         for k, label in parts]
    traces.append(go.Scatter(x=names, y=[_f(r["emotion_alignment"]) for r in rows],
                             name="emotion alignment (0..1)", mode="markers",
                             marker={"size": 12, "symbol": "diamond"}))
    return _fig("EPITOME mechanisms (mean level 0-2) and emotion alignment", traces,
                barmode="group")


def stock_phrases(rows: Rows) -> go.Figure:
    rows = list(reversed(rows[:10]))
    labels = [f"{r['phrase']} ({r['bot']})" for r in rows]
    trace = go.Bar(x=[_f(r["share"]) for r in rows], y=labels, orientation="h",
                   text=[f"{_f(r['share']):.0%}" for r in rows], textposition="auto")
    return _fig("Top stock phrases: share of the bot's recent replies", [trace],
                xaxis={"range": [0, 1], "tickformat": ".0%"}, margin={"l": 320, "t": 50})


def near_duplicates(rows: Rows) -> go.Figure:
    trace = go.Bar(x=[r["bot"] for r in rows], y=[_f(r["near_duplicate_share"]) for r in rows],
                   text=[f"{_f(r['near_duplicate_share']):.1%}" for r in rows])
    return _fig("Near-duplicate share of replies", [trace], yaxis={"tickformat": ".0%"})


def templates(rows: Rows) -> go.Figure:
    rows = list(reversed(rows[:10]))
    trace = go.Bar(x=[_f(r["share"]) for r in rows], orientation="h",
                   y=[f"{r['tactic_sequence']} ({r['bot']})" for r in rows])
    return _fig("Tactic templaticity: most common tactic sequences", [trace],
                xaxis={"range": [0, 1], "tickformat": ".0%"}, margin={"l": 260, "t": 50})


def harms(current: Rows, previous: Rows) -> go.Figure:
    prev = {r["bot"]: r for r in previous}
    traces = []
    for harm in HARMS:
        traces.append(go.Bar(x=[r["bot"] for r in current], y=[_f(r[harm]) for r in current],
                             name=harm))
        traces.append(go.Bar(x=[r["bot"] for r in current], name=f"{harm} (week before)",
                             y=[_f(prev.get(r["bot"], {}).get(harm)) for r in current],
                             marker={"opacity": 0.35}, showlegend=True))
    return _fig("Flagged replies per 1,000 replies: this week vs the week before", traces,
                barmode="group", height=380)


def empathy_gap(rows: Rows) -> go.Figure:
    labels = [f"{r['user_group']} ({r['category']}, {r['bot']}, n={r['replies']})" for r in rows]
    gaps = [_f(r["gap"]) for r in rows]
    trace = go.Bar(x=gaps, y=labels, orientation="h",
                   marker={"color": ["#c0392b" if g < 0 else "#27ae60" for g in gaps]})
    return _fig("Empathy gap: replies to users who mention a group, minus the bot's mean",
                [trace], margin={"l": 300, "t": 50})


def judge_agreement(rows: Rows) -> go.Figure:
    """chatmon judge against the classifiers: Cohen's kappa on flags per week, one line per
    judge label and model (rows of dashboards.queries.JUDGE_AGREEMENT_WEEKLY)."""
    series: dict[str, tuple[list[str], list[float | None], list[str]]] = {}
    for r in rows:
        xs, ys, notes = series.setdefault(r["metric"], ([], [], []))
        xs.append(str(r["time"])[:10])
        ys.append(None if r["kappa"] is None else float(r["kappa"]))
        notes.append(f"n={int(r['n'])}, agreement {_f(r['agreement']):.0%}")
    traces = [go.Scatter(x=xs, y=ys, name=name, mode="lines+markers", text=notes,
                         hovertemplate="%{x}: kappa %{y:.2f} (%{text})")
              for name, (xs, ys, notes) in series.items()]
    return _fig("Classifier vs LLM judge: agreement per week (Cohen's kappa on flags)", traces,
                yaxis={"range": [-0.2, 1], "title": "kappa"}, xaxis={"type": "category"})
