"""The signals ``chatmon compare`` puts side by side, and the empathy gap of paired scenarios.

Rates: the share of a model's replies with at least one finding of the signal flagged by policy
(Wilson interval; the difference by Newcombe's interval). Means: per reply (bootstrap interval,
fixed seed). The first model is the reference: every other model's difference is
``other - reference``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.compare.data import Reply
from pipeline.compare.stats import (
    bootstrap_diff,
    bootstrap_mean,
    excludes_zero,
    newcombe,
    sign_flip_p,
    wilson,
)

EMPATHY_FAILURES = ("empathy.missed", "empathy.advice_before_ack",
                    "empathy.formulaic_restatement", "empathy.overempathising",
                    "empathy.length_inflated")
STYLE = ("words", "emoji", "exclamation", "question", "first_person", "second_person", "hedge")


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    kind: str  # "rate" | "mean"
    about: str
    rate: Callable[[Reply], bool] | None = None
    mean: Callable[[Reply], float | None] | None = None


def _flagged(prefixes: tuple[str, ...]) -> Callable[[Reply], bool]:
    return lambda r: any(label.startswith(prefixes) for label in r.flagged)


def _style(measure: str) -> Callable[[Reply], float | None]:
    def get(r: Reply) -> float | None:
        value = (r.style or {}).get(measure)
        return float(value) if isinstance(value, int | float) else None
    return get


SIGNALS: tuple[Signal, ...] = (
    Signal("empathy", "mean", "mean empathy.score per reply", mean=lambda r: r.empathy),
    Signal("repetition", "rate", "replies with a flagged repetition finding",
           rate=_flagged(("repetition.",))),
    Signal("manipulation", "rate", "replies with a flagged manipulation finding",
           rate=_flagged(("manipulation.",))),
    Signal("toxicity", "rate", "replies with a flagged toxicity finding",
           rate=_flagged(("toxicity.",))),
    Signal("bias", "rate", "replies with a flagged bias.stereotype",
           rate=_flagged(("bias.stereotype",))),
    Signal("pii", "rate", "replies with a flagged PII finding", rate=_flagged(("pii.",))),
    Signal("empathy_missed", "rate", "replies that left an upset user unengaged (flagged "
           "empathy.missed)", rate=_flagged(("empathy.missed",))),
    Signal("empathy_failures", "rate", "replies with a flagged empathy failure "
           "(missed, advice before acknowledgement, formulaic restatement, overempathising, "
           "length inflation)", rate=_flagged(EMPATHY_FAILURES)),
    *(Signal(f"style.{m}", "mean", f"mean {m.replace('_', '-')} count per reply"
             if m != "words" else "mean words per reply", mean=_style(m)) for m in STYLE),
)


def compare_signals(replies: dict[str, list[Reply]], confidence: float) -> list[dict[str, Any]]:
    """One row per signal: each model's estimate, and each other model's difference to the
    first one with whether it is larger than chance."""
    models = list(replies)
    rows = []
    for sig in SIGNALS:
        row: dict[str, Any] = {"signal": sig.name, "kind": sig.kind, "about": sig.about,
                               "models": {}, "differences": {}}
        if sig.rate is not None:
            counts = {m: (sum(sig.rate(r) for r in rs), len(rs)) for m, rs in replies.items()}
            for m, (k, n) in counts.items():
                row["models"][m] = wilson(k, n, confidence).as_dict()
            for m in models[1:]:
                d = newcombe(*counts[models[0]], *counts[m], confidence)
                row["differences"][m] = {**d.as_dict(), "significant": excludes_zero(d)}
        elif sig.mean is not None:
            values = {m: [v for r in rs if (v := sig.mean(r)) is not None]
                      for m, rs in replies.items()}
            for m, vs in values.items():
                row["models"][m] = bootstrap_mean(vs, confidence).as_dict()
            for m in models[1:]:
                d = bootstrap_diff(values[models[0]], values[m], confidence)
                row["differences"][m] = {**d.as_dict(), "significant": excludes_zero(d)}
        rows.append(row)
    return rows


def empathy_gaps(replies: dict[str, list[Reply]], confidence: float) -> list[dict[str, Any]]:
    """Per model, axis and group of the paired probe scenarios: the mean over pairs of (the
    group's empathy - the mean of the pair's groups), with a bootstrap interval over pairs and
    a sign-flip test (p) that decides whether the gap is larger than chance: the percentile
    bootstrap alone is far too sure of itself with a handful of pairs. A pair counts only when
    every one of its groups got a scored reply."""
    out = []
    for model, rs in replies.items():
        # (axis, pair) -> group -> empathy scores of that scenario's replies
        pairs: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(
            lambda: defaultdict(list))
        groups_of: dict[tuple[str, str], set[str]] = defaultdict(set)
        for r in rs:
            p = r.probe or {}
            if p.get("pair") and p.get("axis") and p.get("group"):
                key = (str(p["axis"]), str(p["pair"]))
                groups_of[key].add(str(p["group"]))
                if r.empathy is not None:
                    pairs[key][str(p["group"])].append(r.empathy)
        out += _gap_rows(model, pairs, groups_of, confidence)
    return out


def _gap_rows(model: str, pairs: dict[tuple[str, str], dict[str, list[float]]],
              groups_of: dict[tuple[str, str], set[str]], confidence: float
              ) -> list[dict[str, Any]]:
    gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
    means: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (axis, pair), by_group in sorted(pairs.items()):
        if set(by_group) != groups_of[(axis, pair)] or len(by_group) < 2:
            continue
        group_mean = {g: sum(v) / len(v) for g, v in by_group.items()}
        centre = sum(group_mean.values()) / len(group_mean)
        for g, e in sorted(group_mean.items()):
            gaps[(axis, g)].append(e - centre)
            means[(axis, g)].append(e)
    rows = []
    for (axis, group), values in sorted(gaps.items()):
        est = bootstrap_mean(values, confidence).as_dict()
        p = sign_flip_p(values)
        rows.append({"model": model, "axis": axis, "group": group, "pairs": len(values),
                     "empathy": round(sum(means[(axis, group)]) / len(values), 4),
                     "gap": est["value"], "low": est["low"], "high": est["high"],
                     "p": None if p is None else round(p, 4),
                     "significant": p is not None and p < 1 - confidence})
    return rows
