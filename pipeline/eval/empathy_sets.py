"""``chatmon eval epitome|welivita-pu PATH``: the empathy detector on public labelled sets.

- epitome: ``emotional-reactions-reddit.csv``, ``interpretations-reddit.csv``,
  ``explorations-reddit.csv`` (``sp_id``, ``rp_id``, ``seeker_post``, ``response_post``,
  ``level`` 0-2), joined on (sp_id, rp_id). The response is scored as an assistant turn answering
  the seeker post. ``auroc_*``: level > 0 vs 0 from the mechanism score; ``macro_f1_*``: the
  detector's 3-level ``level`` (its own cut points) against the gold level; ``spearman_total``:
  the overall ``empathy.score`` against the sum of the three gold levels.
- welivita-pu: ``dataset_and_ratings.csv``; three responses (human, ChatGPT, ChatGPT asked to be
  empathetic) to each ``speaker_uttr``, each rated 1-3. ``pairwise_acc``: over the pairs of
  responses to one prompt with different ratings, the share where the higher-rated one has the
  higher ``empathy.score`` (a tie counts one half); ``spearman``: score vs rating over all.

The ``rationales`` columns are never read (they are derived from the labels).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from detectors import registry
from detectors.base import Finding, ScoringInput
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, auroc, macro_f1, read_csv, require, spearman
from pipeline.scoring.suite import score_texts, simple_input
from pipeline.settings import Settings

DETECTOR = "empathy"
EPITOME_FILES = {
    "er": "emotional-reactions-reddit.csv",
    "ip": "interpretations-reddit.csv",
    "ex": "explorations-reddit.csv",
}
WELIVITA_FILE = "dataset_and_ratings.csv"
WELIVITA_KINDS = ("human", "chatgpt", "chatgpt_empathy")


def score_items(items: Sequence[ScoringInput], settings: Settings) -> list[dict[str, Finding]]:
    """Findings by label per item, scored through the registered detector as the pipeline does."""
    det = registry.create(DETECTOR, settings.detector_options.get(DETECTOR, {}))
    return [{f.label: f for f in found} for found in score_texts(det, items)]


def load_epitome(path: Path) -> list[dict[str, Any]]:
    """One dict per (seeker, response) pair with the gold level of each mechanism."""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    cols = ("sp_id", "rp_id", "seeker_post", "response_post", "level")
    for mech, name in EPITOME_FILES.items():
        (file,) = require(path, name)
        for r in read_csv(file, cols):
            row = pairs.setdefault(
                (r["sp_id"], r["rp_id"]), {"prompt": r["seeker_post"], "text": r["response_post"]}
            )
            row[mech] = int(r["level"])
    rows = [r for r in pairs.values() if all(m in r for m in EPITOME_FILES)]
    if not rows:
        raise EvalDataError(f"{path}: no pair is labelled in all three EPITOME files")
    return rows


def evaluate_epitome(path: Path, settings: Settings) -> EvalResult:
    rows = load_epitome(path)
    found = score_items([simple_input(r["text"], prompt=r["prompt"]) for r in rows], settings)
    metrics: dict[str, float] = {}
    detail: dict[str, Any] = {}
    for mech in EPITOME_FILES:
        gold = [r[mech] for r in rows]
        scores = [f[f"{DETECTOR}.{mech}"].score for f in found]
        levels = [int(f[f"{DETECTOR}.{mech}"].evidence["level"]) for f in found]
        metrics[f"auroc_{mech}"] = auroc([int(g > 0) for g in gold], scores)
        metrics[f"macro_f1_{mech}"] = macro_f1(gold, levels)
        detail[f"spearman_{mech}"] = round(spearman(gold, scores), 4)
        detail[f"predicted_levels_{mech}"] = np.bincount(levels, minlength=3).tolist()
    total = [r["er"] + r["ip"] + r["ex"] for r in rows]
    metrics["spearman_total"] = spearman(total, [f[f"{DETECTOR}.score"].score for f in found])
    return EvalResult("epitome", DETECTOR, len(rows), metrics, detail)


def pairwise_accuracy(groups: Sequence[Sequence[tuple[float, float]]]) -> tuple[float, int]:
    """Share of (rating, score) pairs within a group ordered the same way; ties in score = 1/2."""
    hits, n = 0.0, 0
    for group in groups:
        for (ra, sa), (rb, sb) in combinations(group, 2):
            if ra == rb:
                continue
            n += 1
            hits += 0.5 if sa == sb else float((ra > rb) == (sa > sb))
    return (hits / n if n else float("nan")), n


def evaluate_welivita(path: Path, settings: Settings) -> EvalResult:
    (file,) = require(path, WELIVITA_FILE)
    cols = ["speaker_uttr"] + [f"{p}_{k}" for k in WELIVITA_KINDS for p in ("response", "rating")]
    rows = read_csv(file, cols)
    items = [
        simple_input(r[f"response_{k}"], prompt=r["speaker_uttr"], conversation_id=str(i))
        for i, r in enumerate(rows)
        for k in WELIVITA_KINDS
    ]
    scores = [f[f"{DETECTOR}.score"].score for f in score_items(items, settings)]
    ratings = [float(r[f"rating_{k}"]) for r in rows for k in WELIVITA_KINDS]
    k = len(WELIVITA_KINDS)
    groups = [
        list(zip(ratings[i : i + k], scores[i : i + k], strict=True))
        for i in range(0, len(ratings), k)
    ]
    acc, n_pairs = pairwise_accuracy(groups)
    by_kind = {
        kind: round(float(np.mean(scores[j::k])), 4) for j, kind in enumerate(WELIVITA_KINDS)
    }
    detail = {"pairs": n_pairs, "mean_score_by_response_type": by_kind}
    metrics = {"pairwise_acc": acc, "spearman": spearman(ratings, scores)}
    return EvalResult("welivita-pu", DETECTOR, len(rows), metrics, detail)
