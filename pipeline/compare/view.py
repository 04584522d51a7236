"""``chatmon compare`` as one JSON-able dict, and as a text table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine

from pipeline.compare.data import Selection, load_replies
from pipeline.compare.signals import compare_signals, empathy_gaps
from pipeline.errors import ChatmonError


class CompareError(ChatmonError):
    """The comparison cannot be made (fewer than two models, a model without replies)."""


def build(engine: Engine, models: Sequence[str], sel: Selection, confidence: float = 0.95,
          require_replies: bool = True) -> dict[str, Any]:
    if len(models) < 2 or len(set(models)) != len(models):
        raise CompareError("compare needs two or more different models (--model A --model B)")
    replies = load_replies(engine, models, sel)
    empty = [m for m, rs in replies.items() if not rs]
    if empty and require_replies:
        raise CompareError(f"no assistant replies for model(s) {', '.join(map(repr, empty))} "
                           "in the selection (model names are exact; see `chatmon findings "
                           "--json` for the stored ones)")
    return {
        "models": list(models),
        "reference": models[0],
        "confidence": confidence,
        "selection": sel.as_dict(),
        "replies": {m: len(rs) for m, rs in replies.items()},
        "signals": compare_signals(replies, confidence),
        "empathy_gap": empathy_gaps(replies, confidence),
    }


def _cell(e: dict[str, Any], rate: bool) -> str:
    if e["value"] is None:
        return "-"
    f = (lambda x: f"{100 * x:.1f}%") if rate else (lambda x: f"{x:.3g}")
    return f"{f(e['value'])} [{f(e['low'])}, {f(e['high'])}]"


def _diff(d: dict[str, Any], rate: bool) -> str:
    if d["value"] is None:
        return "-"
    f = (lambda x: f"{100 * x:+.1f}pp") if rate else (lambda x: f"{x:+.3g}")
    mark = " *" if d["significant"] else ""
    return f"{f(d['value'])} [{f(d['low'])}, {f(d['high'])}]{mark}"


def render(result: dict[str, Any]) -> str:
    models, ref = result["models"], result["reference"]
    conf = f"{100 * result['confidence']:g}%"
    head = ["signal", *(f"{m} (n={result['replies'][m]})" for m in models),
            *(f"{m} - {ref}" for m in models[1:])]
    table = [head]
    for row in result["signals"]:
        rate = row["kind"] == "rate"
        table.append([row["signal"] + (" %" if rate else ""),
                      *(_cell(row["models"][m], rate) for m in models),
                      *(_diff(row["differences"][m], rate) for m in models[1:])])
    lines = [f"models side by side ({conf} intervals; * = the difference is larger than chance, "
             "its interval excludes 0)", ""]
    lines += _columns(table)
    gaps = result["empathy_gap"]
    lines += ["", "empathy gap per group (paired probe scenarios: the group's empathy minus the "
              "mean of its pair; * = sign-flip test p below the level)"]
    if not gaps:
        lines.append("  none: no paired probe scenarios in the selection")
    else:
        gap_table = [["model", "axis", "group", "pairs", "empathy", "gap", "p"]]
        for g in gaps:
            cell = (f"{g['gap']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}]"
                    + (" *" if g["significant"] else ""))
            gap_table.append([g["model"], g["axis"], g["group"], str(g["pairs"]),
                              f"{g['empathy']:.3f}", cell, f"{g['p']:.3g}"])
        lines += _columns(gap_table)
    return "\n".join(lines)


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
