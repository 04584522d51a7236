"""``mentalmanip`` and ``persuasionforgood``: the manipulation detector on public dialogues.

MentalManip (consensus file): every utterance of a two-person movie dialogue is scored as an
assistant turn whose history is the utterances before it (the other speaker's lines as the
user). A dialogue's score is the noisy-or of its utterances' ``manipulation.score``: the chance
that at least one line is manipulative if each line's score were an independent probability, so
that several moderate lines add up (manipulation in these dialogues is often spread over a few
lines; the max of the lines scored AUROC 0.67 on dev, the noisy-or 0.72). It is flagged at the
shipped ``manipulation.score`` threshold; ``recall_at_cut``, ``fpr_at_cut`` and
``precision_at_cut`` say what that threshold catches and how often it is wrong.

PersuasionForGood: every persuader unit (role 0) is scored as an assistant turn answering the
persuadee's units before it. ``fpr_utterance``: share of persuader units flagged;
``fpr_dialogue``: share of dialogues with any flagged persuader unit. All of it is legitimate
persuasion, so every flag is a false positive.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from detectors.base import Context, Finding, ScoringInput, Turn
from detectors.registry import create
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, at_cut, auroc, require
from pipeline.policy import threshold
from pipeline.scoring.suite import score_texts
from pipeline.settings import Settings

LABEL = "manipulation.score"
HISTORY = 6  # earlier utterances kept as context
_SPEAKER = re.compile(r"^\s*(Person\d+)\s*:\s*(.*)$")
_TS = datetime(2026, 1, 1, tzinfo=UTC)


def _turn(cid: str, i: int, role: str, text: str) -> Turn:
    return Turn(conversation_id=cid, turn=i, role=role, text=text, ts=_TS)  # type: ignore[arg-type]


def dialogue_inputs(cid: str, lines: Sequence[tuple[str, str]], scored: str | None = None
                    ) -> list[ScoringInput]:
    """ScoringInputs for the lines of one dialogue, each (speaker, text). Lines by ``scored``
    (every speaker when None) become assistant turns; the history marks the other speaker's
    lines as user turns."""
    out: list[ScoringInput] = []
    for i, (speaker, text) in enumerate(lines):
        if scored is not None and speaker != scored:
            continue
        history = tuple(
            _turn(cid, j, "assistant" if lines[j][0] == speaker else "user", lines[j][1])
            for j in range(max(0, i - HISTORY), i)
        )
        out.append(ScoringInput(_turn(cid, i, "assistant", text), Context(history=history)))
    return out


def _score(findings: list[Finding]) -> float:
    return max((f.score for f in findings if f.label == LABEL), default=0.0)


def _mcc(tp: int, fp: int, fn: int, tn: int) -> float:
    den = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)) ** 0.5
    return (tp * tn - fp * fn) / den if den else 0.0


def read_mentalmanip(path: Path) -> list[tuple[str, int, list[tuple[str, str]]]]:
    """(id, label, [(speaker, text)]) per dialogue of ``mentalmanip_con.csv``."""
    (con,) = require(path, "mentalmanip_con.csv")
    out = []
    with con.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            lines = [(m.group(1), m.group(2).strip()) for m in map(_SPEAKER.match,
                     row["Dialogue"].splitlines()) if m and m.group(2).strip()]
            if row["Manipulative"] not in ("0", "1"):
                raise EvalDataError(f"{con}: bad Manipulative value in row {row['ID']}")
            if lines:
                out.append((row["ID"], int(row["Manipulative"]), lines))
    return out


def evaluate_mentalmanip(path: Path, settings: Settings) -> EvalResult:
    dialogues = read_mentalmanip(path)
    detector = create("manipulation", settings.detector_options.get("manipulation", {}))
    items: list[ScoringInput] = []
    owner: list[int] = []
    for k, (cid, _label, lines) in enumerate(dialogues):
        batch = dialogue_inputs(cid, lines)
        items += batch
        owner += [k] * len(batch)
    keep = [1.0] * len(dialogues)  # running product of (1 - line score): noisy-or
    for k, found in zip(owner, score_texts(detector, items), strict=True):
        keep[k] *= 1.0 - _score(found)
    scores = [1.0 - k for k in keep]
    labels = [lab for _cid, lab, _lines in dialogues]
    cut = threshold(LABEL, settings.thresholds)
    pred = [int(s >= cut) for s in scores]
    tp = sum(p and y for p, y in zip(pred, labels, strict=True))
    fp = sum(p and not y for p, y in zip(pred, labels, strict=True))
    fn = sum(y and not p for p, y in zip(pred, labels, strict=True))
    tn = len(labels) - tp - fp - fn
    f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    metrics = {"auroc": auroc(labels, scores), "f1": f1, "mcc": _mcc(tp, fp, fn, tn),
               **at_cut(labels, scores, cut)}
    detail = {"threshold": cut, "utterances": len(items), "positives": sum(labels),
              "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
              "detector_version": detector.version}
    return EvalResult("mentalmanip", "manipulation", len(dialogues), metrics, detail)


def read_persuasion(path: Path) -> dict[str, list[tuple[str, str, bool]]]:
    """dialogue id -> [(role, unit, is_strategy)] in file order from ``300_dialog.csv``."""
    (dialog,) = require(path, "300_dialog.csv")
    strategies = {"logical-appeal", "emotion-appeal", "credibility-appeal", "foot-in-the-door",
                  "self-modeling", "personal-story", "donation-information",
                  "source-related-inquiry", "task-related-inquiry", "personal-related-inquiry"}
    out: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
    with dialog.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["B4"] not in ("0", "1"):
                raise EvalDataError(f"{dialog}: bad role {row['B4']!r}")
            text = (row.get("Unit") or "").strip()
            if text:
                tags = {row.get("er_label_1") or "", row.get("er_label_2") or ""}
                out[row["B2"]].append((row["B4"], text, bool(tags & strategies)))
    return out


def evaluate_persuasionforgood(path: Path, settings: Settings) -> EvalResult:
    dialogues = read_persuasion(path)
    detector = create("manipulation", settings.detector_options.get("manipulation", {}))
    items: list[ScoringInput] = []
    meta: list[tuple[str, bool]] = []
    for cid, units in dialogues.items():
        items += dialogue_inputs(cid, [(role, text) for role, text, _s in units], scored="0")
        meta += [(cid, s) for role, _t, s in units if role == "0"]
    cut = threshold(LABEL, settings.thresholds)
    scores = [_score(f) for f in score_texts(detector, items)]
    flags = [s >= cut for s in scores]
    flagged_dialogues = {cid for (cid, _s), flag in zip(meta, flags, strict=True) if flag}
    strategy = [flag for (_cid, s), flag in zip(meta, flags, strict=True) if s]
    metrics = {
        "fpr_utterance": sum(flags) / len(flags) if flags else float("nan"),
        "fpr_dialogue": len(flagged_dialogues) / len(dialogues) if dialogues else float("nan"),
        # Every unit is a negative: recall is NaN (reported as null), precision 0 once anything
        # is flagged, and fpr_at_cut equals fpr_utterance; kept so every safety bench reads alike.
        **at_cut([0] * len(scores), scores, cut),
    }
    detail = {"threshold": cut, "persuader_units": len(flags), "flagged_units": sum(flags),
              "fpr_strategy_units": sum(strategy) / len(strategy) if strategy else None,
              "detector_version": detector.version}
    return EvalResult("persuasionforgood", "manipulation", len(dialogues), metrics, detail)
