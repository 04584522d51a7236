"""``chatmon eval kumar PATH``: agreement of the empathy detector with the experts of Kumar et al.
(2025), per framework and dimension.

Layout (the set's ``dev`` folder): ``original_data/sample_epitome.csv`` (``sp_id``,
``seeker_post``, ``response_post``), ``original_data/sample_empatheticdialogues.csv`` and
``original_data/sample_lend_an_ear_conversations.csv`` (``full_conversation`` with ``Seeker:`` /
``Supporter:`` lines), and ``annotations/<framework>/expert{1,2,3}_ratings.csv``. The gold value
of an item and dimension is the median of the three experts. ``perceived_empathy`` has no texts
and is skipped.

What is compared (Spearman, per dimension, under ``detail``):
- epitome: ``level_emotional_reactions|interpretations|explorations`` vs ``empathy.er|ip|ex``;
- empatheticdialogues: ``empathy`` vs the mean ``empathy.score`` over the supporter turns;
- lend_an_ear (means over supporter turns): ``validating_emotions`` vs er,
  ``encouraging_elaboration`` vs ex, ``demonstrating_understanding`` vs ip, ``advice_giving`` vs
  the share of advice sentences, ``self_oriented`` vs the share of self-disclosure sentences,
  ``dismissing_emotions`` vs ``empathy.missed`` (the user was upset and the reply did not
  engage; until issue 27 it was 1 - ``empathy.score``, which gave 0.24 on the dev half with
  the current detector, against 0.55 for ``empathy.missed``).
``spearman_expert`` is the mean of the per-dimension values.

``kappa_er``, ``kappa_ip``, ``kappa_ex``: quadratic-weighted Cohen's kappa between the detector's
EPITOME levels (0-2, ``evidence.level`` of ``empathy.er|ip|ex``) and the experts' median level on
the EPITOME subsample, the statistic the paper reports; ``detail.published`` holds its figures for
that subsample beside them (``PUBLISHED``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from detectors.base import Context, Finding, ScoringInput, Turn
from pipeline.eval.core import EvalResult, require, spearman, weighted_kappa
from pipeline.eval.empathy_sets import DETECTOR, read_csv, score_items
from pipeline.scoring.suite import simple_input
from pipeline.settings import Settings

EXPERTS = ("expert1", "expert2", "expert3")
# Kumar et al. (2025) on the EPITOME subsample, quadratic-weighted kappa: the median over expert
# pairs and dimensions, and Gemini 2.5 Pro against the experts per mechanism.
PUBLISHED = {"expert_pair_median": 0.58, "gemini_2_5_pro": {"er": 0.64, "ip": 0.59, "ex": 0.76}}
KAPPA_DIMS = {"er": "level_emotional_reactions", "ip": "level_interpretations",
              "ex": "level_explorations"}
Measure = Callable[[dict[str, Finding]], float]


def _tactic_share(tactic: str) -> Measure:
    def share(f: dict[str, Finding]) -> float:
        tactics = [t["tactic"] for t in f[f"{DETECTOR}.score"].evidence["tactics"]]
        return sum(t == tactic for t in tactics) / max(1, len(tactics))

    return share


def _label(sub: str, invert: bool = False) -> Measure:
    return lambda f: (
        (1.0 - f[f"{DETECTOR}.{sub}"].score) if invert else f[f"{DETECTOR}.{sub}"].score
    )


def _missed(f: dict[str, Finding]) -> float:
    """empathy.missed's score (the user was upset and the reply did not engage; absent: 0)."""
    found = f.get(f"{DETECTOR}.missed")
    return found.score if found is not None else 0.0


EPITOME_DIMS = {
    "level_emotional_reactions": _label("er"),
    "level_interpretations": _label("ip"),
    "level_explorations": _label("ex"),
}
ED_DIMS = {"empathy": _label("score")}
LEND_DIMS = {
    "validating_emotions": _label("er"),
    "encouraging_elaboration": _label("ex"),
    "demonstrating_understanding": _label("ip"),
    "advice_giving": _tactic_share("advice"),
    "self_oriented": _tactic_share("self_disclosure"),
    "dismissing_emotions": _missed,
}


def _number(v: str | None) -> float | None:
    """A rating cell as a number; None for blanks and id-like columns (e.g. ``rp_id``)."""
    try:
        return float(v) if v not in ("", None) else None
    except ValueError:
        return None


def expert_median(path: Path, framework: str, id_col: str) -> dict[str, dict[str, float]]:
    """item id -> dimension -> median of the three experts."""
    files = require(path / "annotations" / framework, *(f"{e}_ratings.csv" for e in EXPERTS))
    per: dict[str, dict[str, list[float]]] = {}
    for file in files:
        for row in read_csv(file, (id_col,)):
            item = per.setdefault(row[id_col], {})
            for k, v in row.items():
                value = _number(v)
                if k != id_col and k and value is not None:
                    item.setdefault(k, []).append(value)
    return {i: {k: statistics.median(v) for k, v in d.items()} for i, d in per.items()}


def conversation_inputs(cid: str, text: str) -> list[ScoringInput]:
    """One assistant ScoringInput per ``Supporter:`` line, with the conversation so far."""
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    history: list[Turn] = []
    out = []
    for line in text.replace("_comma_", ",").split("\n"):
        speaker, sep, said = line.strip().partition(":")
        if not sep or speaker not in ("Seeker", "Supporter") or not said.strip():
            continue
        role = "user" if speaker == "Seeker" else "assistant"
        turn = Turn(cid, len(history), role, said.strip(), ts)  # type: ignore[arg-type]
        if role == "assistant":
            out.append(ScoringInput(turn, Context(history=tuple(history[-8:]))))
        history.append(turn)
    return out


def _correlate(
    gold: dict[str, dict[str, float]],
    measured: dict[str, list[dict[str, Finding]]],
    dims: dict[str, Measure],
) -> dict[str, float]:
    ids = [i for i in gold if measured.get(i)]
    out = {}
    for dim, measure in dims.items():
        g = [gold[i][dim] for i in ids if dim in gold[i]]
        m = [float(np.mean([measure(f) for f in measured[i]])) for i in ids if dim in gold[i]]
        out[dim] = round(spearman(g, m), 4) if len(set(g)) > 1 else float("nan")
    return out


def _by_item(keys: Sequence[str], found: Sequence[dict[str, Finding]]) -> dict[str, list]:
    out: dict[str, list[dict[str, Finding]]] = {}
    for k, f in zip(keys, found, strict=True):
        out.setdefault(k, []).append(f)
    return out


def _conversations(path: Path, file: str, id_col: str, settings: Settings) -> dict[str, list]:
    (csv_file,) = require(path / "original_data", file)
    convs = {
        r[id_col]: r["full_conversation"] for r in read_csv(csv_file, (id_col, "full_conversation"))
    }
    items = [(cid, x) for cid, text in convs.items() for x in conversation_inputs(cid, text)]
    return _by_item([c for c, _ in items], score_items([x for _, x in items], settings))


def level_kappas(gold: dict[str, dict[str, float]], measured: dict[str, list[dict[str, Finding]]]
                 ) -> tuple[dict[str, float], int]:
    """Quadratic-weighted kappa per mechanism: the detector's level against the experts' median
    level (rounded), over the items both have."""
    out = {}
    ids = [i for i in gold if measured.get(i)]
    for mech, dim in KAPPA_DIMS.items():
        rated = [i for i in ids if dim in gold[i]]
        experts = [int(round(gold[i][dim])) for i in rated]
        ours = [int(measured[i][0][f"{DETECTOR}.{mech}"].evidence["level"]) for i in rated]
        out[mech] = weighted_kappa(experts, ours)
    return out, len(ids)


def evaluate_kumar(path: Path, settings: Settings) -> EvalResult:
    (ep_file,) = require(path / "original_data", "sample_epitome.csv")
    ep_rows = read_csv(ep_file, ("sp_id", "seeker_post", "response_post"))
    ep_items = [simple_input(r["response_post"], prompt=r["seeker_post"]) for r in ep_rows]
    measured = {
        "epitome": _by_item([r["sp_id"] for r in ep_rows], score_items(ep_items, settings)),
        "empatheticdialogues": _conversations(
            path, "sample_empatheticdialogues.csv", "conv_id", settings
        ),
        "lend_an_ear": _conversations(
            path, "sample_lend_an_ear_conversations.csv", "conversation_id", settings
        ),
    }
    frameworks = {
        "epitome": ("sp_id", EPITOME_DIMS),
        "empatheticdialogues": ("conv_id", ED_DIMS),
        "lend_an_ear": ("conversation_id", LEND_DIMS),
    }
    detail: dict[str, Any] = {}
    golds = {name: expert_median(path, name, id_col) for name, (id_col, _) in frameworks.items()}
    n = 0
    for name, (_, dims) in frameworks.items():
        detail[name] = _correlate(golds[name], measured[name], dims)
        n += sum(1 for i in golds[name] if measured[name].get(i))
    values = [v for d in detail.values() for v in d.values() if not np.isnan(v)]
    metrics = {"spearman_expert": float(np.mean(values)) if values else float("nan")}
    kappas, n_kappa = level_kappas(golds["epitome"], measured["epitome"])
    metrics.update({f"kappa_{m}": v for m, v in kappas.items()})
    detail["kappa"] = {"n": n_kappa, "published": PUBLISHED}
    detail["skipped"] = ["perceived_empathy (no texts in the set)"]
    return EvalResult("kumar", DETECTOR, n, metrics, detail)
