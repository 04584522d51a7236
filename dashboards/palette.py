"""One colour per signal, for ``chatmon report`` and the Grafana dashboards alike.

The six signals take the six hues of Paul Tol's *bright* qualitative scheme, which stays
distinguishable for deuteranopes and protanopes (tests/test_palette.py checks every pair under
simulated deuteranopia and protanopia). A series paired with another of the same signal (this
week and the week before) keeps the hue: the earlier one is :func:`lighter`.
"""

from __future__ import annotations

SIGNAL: dict[str, str] = {
    "empathy": "#4477AA",  # blue
    "repetition": "#228833",  # green
    "toxicity": "#EE6677",  # red
    "bias": "#AA3377",  # purple
    "manipulation": "#CCBB44",  # yellow
    "pii": "#66CCEE",  # cyan
}
NEUTRAL = "#777777"  # zero lines, "within chance" markers
INK = "#222222"  # the ring that marks a change larger than chance
# Emotion level per cell of the empathy heatmap: white (0) through the empathy hue to a dark
# blue of the same hue (1); lightness falls monotonically, so it reads in grey too.
EMPATHY_SCALE: list[list[float | str]] = [[0.0, "#FFFFFF"], [0.5, SIGNAL["empathy"]],
                                          [1.0, "#172A3E"]]
PREVIOUS_TINT = 0.6  # how far towards white the week before is drawn


def lighter(colour: str, tint: float = PREVIOUS_TINT) -> str:
    """``colour`` (``#RRGGBB``) mixed with white: the same hue, lighter."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * tint):02X}" for c in rgb)


def colour(signal: str) -> str:
    """The signal's colour; the signal is the detector name or the first part of a label
    (``toxicity.insult`` -> toxicity)."""
    return SIGNAL[signal.split(".", 1)[0]]
