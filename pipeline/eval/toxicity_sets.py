"""``chatmon eval davidson|toxigen|jigsaw``: the toxicity detector on public labelled sets.

Each set is read from its original layout (see the set's SOURCE.md):
- davidson: ``labeled_data.csv`` (``class`` 0 hate, 1 offensive, 2 neither; ``tweet``);
- toxigen: ``toxigen_prompt_seed_sentences.csv`` (``text``, ``target_group``, ``label``
  hate|neutral);
- jigsaw: ``test_examples.csv`` (``comment_text`` and six 0/1 label columns).

Texts are scored as assistant turns through the registered detector exactly as the pipeline does
(shared embeddings, batches). Findings below the detector's ``min_score`` floor are dropped in
production; evals set the floor to 0 so that low scores still rank. Thresholds (for
``worst_group_bal_acc``, ``max_group_fpr`` and the ``*_at_cut`` metrics: recall, false positive
rate and precision at the shipped flag threshold of the label each bench scores) come from the
shipped policy, never from the data.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from detectors import registry
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, at_cut, auprc, auroc, read_csv, require
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts, simple_input
from pipeline.settings import Settings

DETECTOR = "toxicity"
LABELS = ("toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack")


@dataclass(frozen=True)
class Row:
    text: str
    labels: dict[str, int]
    group: str = ""


def load_davidson(path: Path) -> list[Row]:
    """Tweets; ``toxic`` = hate or offensive (class 0 or 1), ``hate`` = class 0."""
    (file,) = require(path, "labeled_data.csv")
    rows = []
    for r in read_csv(file, ("class", "tweet")):
        cls = int(r["class"])
        labels = {"toxic": int(cls in (0, 1)), "hate": int(cls == 0)}
        rows.append(Row(html.unescape(r["tweet"]), labels))
    return rows


def load_toxigen(path: Path) -> list[Row]:
    """Seed statements; ``hate`` = 1 for the hate prompt files, 0 for the neutral ones."""
    (file,) = require(path, "toxigen_prompt_seed_sentences.csv")
    rows = []
    for r in read_csv(file, ("text", "target_group", "label")):
        if r["label"] not in ("hate", "neutral"):
            raise EvalDataError(f"{file}: unknown label {r['label']!r}")
        rows.append(Row(r["text"].strip(), {"hate": int(r["label"] == "hate")}, r["target_group"]))
    return rows


JIGSAW_COLUMNS = ("toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate")


def load_jigsaw(path: Path) -> list[Row]:
    (file,) = require(path, "test_examples.csv")
    return [
        Row(r["comment_text"], {c: int(r[c]) for c in JIGSAW_COLUMNS})
        for r in read_csv(file, ("comment_text", *JIGSAW_COLUMNS))
    ]


def score_rows(rows: Sequence[Row], settings: Settings) -> dict[str, np.ndarray]:
    """Scores of every toxicity label for every row (0 where the detector emitted none)."""
    options = {**settings.detector_options.get(DETECTOR, {}), "min_score": 0.0}
    detector = registry.create(DETECTOR, options)
    found = score_texts(detector, [simple_input(r.text) for r in rows], settings.batch_size)
    out = {label: np.zeros(len(rows)) for label in LABELS}
    for i, findings in enumerate(found):
        for f in findings:
            sub = f.label.split(".", 1)[1]
            out[sub][i] = max(out[sub][i], f.score)
    return out


def _detail_common(settings: Settings) -> dict[str, object]:
    opts = settings.detector_options.get(DETECTOR, {})
    return {"backend": opts.get("backend", "offline"), "variant": opts.get("variant")}


def evaluate_davidson(path: Path, settings: Settings) -> EvalResult:
    rows = load_davidson(path)
    scores = score_rows(rows, settings)
    toxic = [r.labels["toxic"] for r in rows]
    hate = [r.labels["hate"] for r in rows]
    cut = _cut("toxicity", settings)
    metrics = {
        "auroc_toxic": auroc(toxic, scores["toxicity"].tolist()),
        "auprc_hate": auprc(hate, scores["identity_attack"].tolist()),
        # offensive + hate (``toxic``) by the toxicity label, at its shipped cut
        **at_cut(toxic, scores["toxicity"].tolist(), cut),
    }
    hate_cut = _cut("identity_attack", settings)
    detail = {**_detail_common(settings), "hate_rate": float(np.mean(hate)),
              "auroc_hate": auroc(hate, scores["identity_attack"].tolist()),
              "threshold": cut, "hate_threshold": hate_cut,
              "hate_at_cut": at_cut(hate, scores["identity_attack"].tolist(), hate_cut)}
    return EvalResult("davidson", DETECTOR, len(rows), metrics, detail)


def _cut(label: str, settings: Settings) -> float:
    return threshold(f"{DETECTOR}.{label}", settings.thresholds)


def group_rates(
    y: Sequence[int], flagged: Sequence[bool], groups: Sequence[str]
) -> dict[str, dict[str, float]]:
    """Per group: false positive rate, true positive rate and balanced accuracy."""
    by: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    for yi, fi, g in zip(y, flagged, groups, strict=True):
        by[g].append((yi, fi))
    out = {}
    for g, pairs in sorted(by.items()):
        neg = [f for yi, f in pairs if yi == 0]
        pos = [f for yi, f in pairs if yi == 1]
        fpr = float(np.mean(neg)) if neg else float("nan")
        tpr = float(np.mean(pos)) if pos else float("nan")
        out[g] = {"n_hate": len(pos), "n_neutral": len(neg), "fpr": fpr, "tpr": tpr,
                  "bal_acc": float(np.nanmean([tpr, 1 - fpr]))}
    return out


def evaluate_toxigen(path: Path, settings: Settings) -> EvalResult:
    rows = load_toxigen(path)
    scores = scores_for_toxigen(score_rows(rows, settings))
    y = [r.labels["hate"] for r in rows]
    cut = _cut("toxicity", settings)
    per_group = group_rates(y, list(scores >= cut), [r.group for r in rows])
    metrics = {
        "auroc": auroc(y, scores.tolist()),
        "worst_group_bal_acc": min(g["bal_acc"] for g in per_group.values()),
        "max_group_fpr": max(g["fpr"] for g in per_group.values() if g["n_neutral"]),
        **at_cut(y, scores.tolist(), cut),
    }
    detail = {**_detail_common(settings), "threshold": cut, "groups": per_group}
    return EvalResult("toxigen", DETECTOR, len(rows), metrics, detail)


def scores_for_toxigen(scores: dict[str, np.ndarray]) -> np.ndarray:
    """ToxiGen's hate is toxicity in the broad sense the ``toxicity`` label covers."""
    return scores["toxicity"]


def evaluate_jigsaw(path: Path, settings: Settings) -> EvalResult:
    rows = load_jigsaw(path)
    scores = score_rows(rows, settings)
    toxic = [r.labels["toxic"] for r in rows]
    cut = _cut("toxicity", settings)
    metrics = {"auroc_toxic": auroc(toxic, scores["toxicity"].tolist()),
               **at_cut(toxic, scores["toxicity"].tolist(), cut)}
    per_label = {
        ours: auroc([r.labels[theirs] for r in rows], scores[ours].tolist())
        for ours, theirs in zip(LABELS, JIGSAW_COLUMNS, strict=True)
        if sum(r.labels[theirs] for r in rows) > 0
    }
    detail = {**_detail_common(settings), "auroc_per_label": per_label,
              "n_toxic": sum(toxic), "threshold": cut}
    return EvalResult("jigsaw", DETECTOR, len(rows), metrics, detail)
