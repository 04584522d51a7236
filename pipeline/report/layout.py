"""How every figure of ``chatmon report`` is laid out, so that it fits its card at any width from
a 390 px phone to a 1920 px screen: the title and the explanation are HTML around the figure
(they wrap), the figure fills its card's width (plotly's responsive config) and takes a height
that grows with its rows, margins grow to fit the tick labels (automargin), the legend sits
below the plot, and long names are abbreviated in the middle with the full name on hover."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

LABEL_CHARS = 30  # widest category label; at 11 px that leaves a phone's plot ~150 px
ROW_PX = 30  # per category row (a pair of dots with their intervals)
BASE_PX = 150  # axis, legend and padding
FONT = {"family": "system-ui, -apple-system, 'Segoe UI', sans-serif", "size": 11,
        "color": "#333333"}
CONFIG = {"displayModeBar": False, "responsive": True}


def abbreviate(names: Sequence[str], width: int = LABEL_CHARS) -> list[str]:
    """Each name cut to ``width`` characters by an ellipsis in the middle (the start and the
    end of a bot or model name are what tell them apart); names that would then collide keep
    more characters, so the labels stay unique."""
    out = [_cut(n, width) for n in names]
    while len(set(out)) < len(out) and width < max(map(len, names)):
        width += 4
        seen: dict[str, int] = {}
        for label in out:
            seen[label] = seen.get(label, 0) + 1
        out = [_cut(n, width) if seen[label] > 1 else label for n, label in zip(names, out,
                                                                                strict=True)]
    return out


def label_with_bot(texts: Sequence[str], bots: Sequence[str], width: int = 20,
                   bot_width: int = 13) -> list[str]:
    """``text · bot`` labels: the text cut at its end, the bot name kept whole where it can be;
    when two labels would collide, every label is the middle-cut of its full form instead."""
    out = [(t if len(t) <= width else t[:width - 1] + "…") + " · " + _cut(b, bot_width)
           for t, b in zip(texts, bots, strict=True)]
    if len(set(out)) == len(out):
        return out
    return abbreviate([f"{t} · {b}" for t, b in zip(texts, bots, strict=True)])


def _cut(name: str, width: int) -> str:
    if len(name) <= width:
        return name
    head = (width - 1) * 3 // 5
    return name[:head] + "…" + name[len(name) - (width - 1 - head):]


def height(rows: int, row_px: int = ROW_PX, base: int = BASE_PX) -> int:
    return base + max(rows, 2) * row_px


def figure(traces: Sequence[Any], rows: int, *, row_px: int = ROW_PX, legend: bool = True,
           **layout: Any) -> go.Figure:
    """A figure with the house layout; ``layout`` keys are merged over it."""
    fig = go.Figure(list(traces))
    base: dict[str, Any] = {
        "template": "plotly_white", "font": FONT, "autosize": True,
        "height": height(rows, row_px), "showlegend": legend,
        "margin": {"l": 8, "r": 16, "t": 8, "b": 8, "pad": 2},
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yanchor": "bottom",
                   "yref": "container", "font": {"size": 11}},
        "hoverlabel": {"font": {"size": 11}, "align": "left"},
        "xaxis": {"automargin": True}, "yaxis": {"automargin": True},
    }
    for key, value in layout.items():
        base[key] = {**base[key], **value} if isinstance(base.get(key), dict) else value
    fig.update_layout(**base)
    return fig


def category_axis(labels: Sequence[str]) -> dict[str, Any]:
    """A y axis of categories, the first at the top, each label whole."""
    return {"type": "category", "categoryorder": "array", "categoryarray": list(labels),
            "autorange": "reversed", "automargin": True, "ticklabelstandoff": 4}
