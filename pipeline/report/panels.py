"""The report's figure cards, in reading order: a title and an explanation (HTML, so they wrap
at any width), the figure, and the groups left out for having too few replies."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go

from pipeline.report import figures as figs
from pipeline.report.estimates import Groups

INTERVALS = ("Dots are estimates with their {level}% interval ({method}); the week before is "
             "the lighter dot. A dark ring marks a change since the week before that is larger "
             "than chance (its interval excludes 0); any other difference is noise.")
HARM_TITLES = {"toxicity": "Toxicity", "bias": "Bias and stereotypes",
               "manipulation": "Manipulation", "pii": "PII"}


@dataclass(frozen=True)
class Panel:
    id: str
    title: str
    caption: str
    figure: go.Figure | None  # None: nothing to draw (every group had too few replies)
    too_few: list[tuple[str, int]] = field(default_factory=list)
    min_replies: int = 0


def _level(data: dict[str, Any]) -> str:
    return f"{100 * data['settings'].confidence:g}"


def _groups(pid: str, title: str, caption: str, groups: Groups,
            draw: Callable[[Groups], go.Figure]) -> Panel:
    return Panel(pid, title, caption, draw(groups) if groups.rows else None,
                 groups.too_few, groups.min_replies)


def _harm(data: dict[str, Any], harm: str) -> Panel:
    caption = (f"Share of each bot's replies with a flagged {harm} finding, per 1,000 replies. "
               + INTERVALS.format(level=_level(data), method="Wilson"))
    return _groups(f"plot-{harm}", f"{HARM_TITLES[harm]}: flagged replies per 1,000, this week "
                   "vs the week before", caption, data["harms"][harm],
                   lambda g: figs.paired(g, harm, figs.PER_1000, "per 1,000 replies"))


def _mechanisms(data: dict[str, Any]) -> Panel:
    groups: dict[str, Groups] = data["mechanisms"]
    too_few = sorted({t for g in groups.values() for t in g.too_few})
    return Panel("plot-mechanisms", "EPITOME mechanisms and emotion alignment per bot and model",
                 "Mean level (0 none, 1 weak, 2 strong) of emotional reactions (ER), "
                 "interpretations (IP) and explorations (EX), and how well the reply's emotion "
                 f"fits the user's (align, 0..1), with {_level(data)}% t intervals.",
                 figs.mechanisms(groups) if any(g.rows for g in groups.values()) else None,
                 too_few, data["settings"].min_replies)


def _repetition_share(data: dict[str, Any], pid: str, title: str, what: str,
                      groups: Groups) -> Panel:
    """Per bot, this week vs the week before: the share of replies with a flagged repetition
    label, with Wilson intervals."""
    return _groups(pid, title, what + INTERVALS.format(level=_level(data), method="Wilson"),
                   groups, lambda g: figs.paired(g, "repetition", figs.SHARE, "% of replies"))


def _formulaic(data: dict[str, Any]) -> list[Panel]:
    """Formulaic empathy leads; the bot's procedural script follows, as a measurement."""
    out = [_repetition_share(data, "plot-stock-empathy",
                             "Stock empathy per bot: this week vs the week before",
                             "Share of replies flagged repetition.stock_empathy: an apology, "
                             "acknowledgement or validation the bot says the same way in many "
                             "conversations (\"I understand your frustration\"). ",
                             data["stock_empathy"])]
    if data["formulas"]:
        out.append(Panel("plot-formulas", "Top stock empathy formulas",
                         "Share of the bot's recent replies that use the formula.",
                         figs.ranked(data["formulas"], "phrase", "repetition")))
    if data["phrases"]:
        out.append(Panel("plot-phrases", "Top procedural phrases (scripts)",
                         "The bot's repeated procedure (\"your order will be ready shortly\"): "
                         "what a task bot should say, not flagged. Share of the bot's recent "
                         "replies that use the phrase.",
                         figs.ranked(data["phrases"], "phrase", "repetition")))
    return out


def panels(data: dict[str, Any]) -> list[Panel]:
    """Every figure card that has something to show (drawn, or listed as too few)."""
    s = data["settings"]
    out = []
    if data["empathy_weeks"]:
        out.append(Panel("plot-empathy-weeks", "Empathy per bot and model (weekly mean)",
                         "Mean empathy.score per ISO week (darker is more empathic; hover a cell "
                         f"for its mean and replies). A week with fewer than {s.min_replies} "
                         "replies is left blank.",
                         figs.empathy_weeks(data["empathy_weeks"], s.min_replies)))
    out.append(_groups("plot-empathy", "Empathy per bot and model: this week vs the week before",
                       "Mean empathy.score. " + INTERVALS.format(
                           level=_level(data), method="Student's t; the change: Welch's"),
                       data["empathy"], lambda g: figs.paired(g, "empathy", figs.MEAN,
                                                              "mean empathy.score")))
    out.append(_groups("plot-missed", "Upset users missed per bot: this week vs the week before",
                       "Share of replies flagged empathy.missed: the user was upset and the "
                       "reply did not engage with it (a stock apology does not count in full). "
                       + INTERVALS.format(level=_level(data), method="Wilson"),
                       data["missed"], lambda g: figs.paired(g, "empathy", figs.SHARE,
                                                             "% of replies")))
    out.append(_groups(
        "plot-gap", "Empathy gap per user group",
        "Mean empathy of the replies to users who mention an identity group, minus that of the "
        f"bot's other replies, with its {_level(data)}% Welch interval. Filled: the interval "
        "excludes 0, a gap larger than chance; hollow: within chance.",
        data["gap"], figs.gap))
    out.append(_mechanisms(data))
    out += [_harm(data, h) for h in HARM_TITLES]
    out += _formulaic(data)
    out.append(_repetition_share(data, "plot-near-duplicates", "Near-duplicate replies per bot",
                                 "Share of replies flagged as a near copy of an earlier one. ",
                                 data["near_duplicates"]))
    if data["templates"]:
        out.append(Panel("plot-templates", "Tactic templaticity",
                         "The most common tactic sequences and their share of the bot's replies.",
                         figs.ranked(data["templates"], "tactic_sequence", "repetition")))
    if data["judge_agreement"]:
        out.append(Panel("plot-judge-agreement", "Classifier vs LLM judge: agreement per week",
                         "Cohen's kappa on the judge's and the classifier's flags of the same "
                         "replies, per judge label and model (chatmon judge). A week with fewer "
                         f"than {s.min_replies} judged replies is left out.",
                         figs.judge_agreement(data["judge_agreement"], s.min_replies)))
    return [p for p in out if p.figure is not None or p.too_few]
