"""``crows-pairs`` and ``bbq``: the bias detector on stereotype minimal pairs and on QA answers.

Both also report what a team sees at the shipped ``bias.stereotype`` threshold
(``pipeline.eval.core.at_cut``): ``recall_at_cut`` and ``fpr_at_cut``.

CrowS-Pairs (measure only; its card forbids training on it): each sentence of a pair is scored as
an assistant turn; a sentence's score is its highest ``bias.stereotype`` score (0 if none). The
detector runs with ``min_score=0`` so that every sentence keeps its continuous score (the shipped
default drops findings under 0.05 to keep the store small). ``pairwise_acc`` counts a pair right
when the more stereotypical sentence scores higher (ties count one half), overall and for the
``stereo`` and ``antistereo`` subsets, and per bias type under ``detail``. At the cut, the more
stereotypical sentence of each pair is a positive and the other one a negative; the other one is
often an anti-stereotype, still a statement about a group, so its ``fpr_at_cut`` is a pessimistic
false-positive rate.

BBQ: a chatbot's answer is what we monitor, so each (question, answer) becomes an assistant turn:
a declarative statement built from the question and the answer ("Who was not comfortable using
the phone?" + "The grandfather" -> "The grandfather was not comfortable using the phone."); the
"unknown"
option becomes "It can't be determined who was not comfortable using the phone.". In ambiguous
contexts the biased answer (the stereotyped group for a negative question, the other group for a
non-negative one, as in BBQ's bias score) is a positive and the unknown answer a negative:
``auroc``. The context is not passed: the detector judges what a reply says about a group and does
not check claims against the conversation, so the same statement gets the same score in both
context conditions (and each distinct statement is scored once). ``fpr_disambig``: share of
correct, context-supported answers in disambiguated contexts flagged at the shipped
``bias.stereotype`` threshold. ``detail`` adds the harder ambiguous-context comparison of the
biased answer against the counter-biased one (same sentence, other group). ``recall_at_cut`` /
``fpr_at_cut``: the biased / unknown answers of ambiguous contexts flagged at the threshold.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from detectors.base import Finding
from detectors.features import SentenceEncoder
from detectors.registry import create
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, at_cut, auroc, require
from pipeline.policy import threshold
from pipeline.scoring.suite import DetectorSuite, simple_input
from pipeline.settings import Settings

LABEL = "bias.stereotype"
CROWS_FILE = "crows_pairs_anonymized.csv"
_WH = re.compile(r"^(?:who|which\s+\w+|what\s+\w+)\s+(.*)$", re.IGNORECASE)
_WHOSE = re.compile(r"^whose\s+(.*)$", re.IGNORECASE)


def _detector(settings: Settings) -> Any:
    options = {**settings.detector_options.get("bias", {}), "min_score": 0.0}
    return create("bias", options)


@cache
def _encoder(backend: str = "torch") -> SentenceEncoder:
    """One loaded MiniLM per process and backend for both harnesses (and their tests)."""
    return SentenceEncoder(backend=backend)


def stereotype_scores(texts: Sequence[str], settings: Settings) -> list[float]:
    """The highest ``bias.stereotype`` score of each text scored as an assistant turn (each
    distinct text once)."""
    unique = list(dict.fromkeys(texts))
    suite = DetectorSuite([_detector(settings)], encoder=_encoder(settings.encoder_backend))
    found: list[list[Finding]] = []
    for i in range(0, len(unique), settings.batch_size):
        res = suite.score([simple_input(t, "assistant") for t in unique[i:i + settings.batch_size]])
        if res.failures:
            raise RuntimeError(res.failures[0].error)
        found += res.findings
    best = {t: max((f.score for f in fs if f.label == LABEL), default=0.0)
            for t, fs in zip(unique, found, strict=True)}
    return [best[t] for t in texts]


def _pair_acc(more: Sequence[float], less: Sequence[float]) -> float:
    if not more:
        return float("nan")
    wins = sum(1.0 if m > s else 0.5 if m == s else 0.0 for m, s in zip(more, less, strict=True))
    return wins / len(more)


def evaluate_crows(path: Path, settings: Settings) -> EvalResult:
    (csv_path,) = require(path, CROWS_FILE)
    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or not {"sent_more", "sent_less", "stereo_antistereo"} <= set(rows[0]):
        raise EvalDataError(f"{csv_path}: not a CrowS-Pairs file")
    scores = stereotype_scores([r["sent_more"] for r in rows] + [r["sent_less"] for r in rows],
                               settings)
    more, less = scores[: len(rows)], scores[len(rows):]

    def acc(keep: Any) -> float:
        idx = [i for i, r in enumerate(rows) if keep(r)]
        return _pair_acc([more[i] for i in idx], [less[i] for i in idx])

    detail: dict[str, Any] = {}
    for bt in sorted({r["bias_type"] for r in rows}):
        subset = [r for r in rows if r["bias_type"] == bt]
        detail[bt] = {
            "n": len(subset),
            "pairwise_acc": _r(acc(lambda r, bt=bt: r["bias_type"] == bt)),
            "pairwise_acc_stereo": _r(acc(lambda r, bt=bt: r["bias_type"] == bt
                                          and r["stereo_antistereo"] == "stereo")),
            "pairwise_acc_antistereo": _r(acc(lambda r, bt=bt: r["bias_type"] == bt
                                              and r["stereo_antistereo"] == "antistereo")),
        }
    cut = threshold(LABEL, settings.thresholds)
    flags = at_cut([1] * len(more) + [0] * len(less), more + less, cut)
    metrics = {
        "pairwise_acc": acc(lambda r: True),
        "pairwise_acc_stereo": acc(lambda r: r["stereo_antistereo"] == "stereo"),
        "pairwise_acc_antistereo": acc(lambda r: r["stereo_antistereo"] == "antistereo"),
        "recall_at_cut": flags["recall_at_cut"],
        "fpr_at_cut": flags["fpr_at_cut"],
    }
    return EvalResult("crows-pairs", "bias", len(rows), metrics,
                      {"threshold": cut, "by_bias_type": detail})


def _r(v: float) -> float | None:
    return None if v != v else round(v, 4)


def answer_statement(question: str, answer: str, unknown: bool) -> str:
    """A declarative reply from a BBQ question and one of its answers (see module docstring)."""
    q = question.strip().rstrip("?").strip()
    a = answer.strip().rstrip(".")
    m = _WH.match(q)
    if m:
        return f"It can't be determined who {m.group(1)}." if unknown else f"{a} {m.group(1)}."
    m = _WHOSE.match(q)
    if m:
        return f"It can't be determined whose {m.group(1)}." if unknown else \
            f"{a}'s {m.group(1)}."
    return f"{q}? {a}."


def bbq_roles(row: dict[str, Any]) -> dict[str, int]:
    """Indexes of the ``biased``, ``counter`` and ``unknown`` answers of one BBQ row."""
    groups = {g.lower() for g in row["additional_metadata"]["stereotyped_groups"]}
    info = [row["answer_info"][f"ans{i}"] for i in range(3)]
    unknown = [i for i, (_, tag) in enumerate(info) if tag == "unknown"]
    target = [i for i, (form, tag) in enumerate(info)
              if tag != "unknown" and (tag.lower() in groups or form.lower() in groups)]
    if len(unknown) != 1 or len(target) != 1:
        raise EvalDataError(f"BBQ row {row.get('example_id')}: cannot find target/unknown answer")
    other = ({0, 1, 2} - {unknown[0], target[0]}).pop()
    neg = row["question_polarity"] == "neg"
    return {"biased": target[0] if neg else other, "counter": other if neg else target[0],
            "unknown": unknown[0]}


def _load_bbq(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.glob("*.jsonl"))
    if not files:
        raise EvalDataError(f"{path}: no BBQ *.jsonl files")
    rows = []
    for f in files:
        with f.open(encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    return rows


def evaluate_bbq(path: Path, settings: Settings) -> EvalResult:
    rows = _load_bbq(path)
    texts: list[str] = []
    plan: list[tuple[int, str]] = []  # (row index, which answer)
    for i, row in enumerate(rows):
        roles = bbq_roles(row)
        wanted = ("biased", "counter", "unknown") if row["context_condition"] == "ambig" else (
            "correct",)
        for kind in wanted:
            j = row["label"] if kind == "correct" else roles[kind]
            texts.append(answer_statement(row["question"], row[f"ans{j}"], j == roles["unknown"]))
            plan.append((i, kind))
    scores = stereotype_scores(texts, settings)
    by_row: dict[int, dict[str, float]] = defaultdict(dict)
    for (i, kind), s in zip(plan, scores, strict=True):
        by_row[i][kind] = s
    return _bbq_result(rows, by_row, threshold(LABEL, settings.thresholds))


def _bbq_result(rows: list[dict[str, Any]], by_row: dict[int, dict[str, float]],
                cut: float) -> EvalResult:
    labels: list[int] = []
    values: list[float] = []
    per_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    flagged: list[float] = []
    for i, row in enumerate(rows):
        s, cat = by_row[i], row["category"]
        if row["context_condition"] == "ambig":
            labels += [1, 0]
            values += [s["biased"], s["unknown"]]
            b, c = s["biased"], s["counter"]
            pair = 1.0 if b > c else 0.5 if b == c else 0.0
            per_cat[cat]["pair"].append(pair)
        else:
            flagged.append(float(s["correct"] >= cut))
            per_cat[cat]["flag"].append(flagged[-1])
    detail = {
        "threshold": cut,
        "pairwise_acc_biased_vs_counter": _r(_mean([p for c in per_cat.values()
                                                    for p in c["pair"]])),
        "by_category": {c: {"pairwise_acc_biased_vs_counter": _r(_mean(v["pair"])),
                            "fpr_disambig": _r(_mean(v["flag"]))}
                        for c, v in sorted(per_cat.items())},
    }
    flags = at_cut(labels, values, cut)
    metrics = {"auroc": auroc(labels, values), "fpr_disambig": _mean(flagged),
               "recall_at_cut": flags["recall_at_cut"], "fpr_at_cut": flags["fpr_at_cut"]}
    return EvalResult("bbq", "bias", len(rows), metrics, detail)


def _mean(v: Sequence[float]) -> float:
    return sum(v) / len(v) if v else float("nan")
