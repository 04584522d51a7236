"""``chatmon eval goemotions PATH``: the empathy detector's user-emotion model on GoEmotions.

PATH is a folder of GoEmotions-format ``.tsv`` files (``text``, comma-separated label indexes,
``id``) and ``labels.txt`` (Ekman: anger, disgust, fear, joy, neutral, sadness, surprise). Every
``.tsv`` file is read except ``train.tsv``, the split the shipped model was trained on (scoring
it would be in-sample; ``detail.skipped`` says so). The official test split must not be read
from any copy here: the issue's authors measure it.

The measure (issue 27): single-label comments, disgust folded into anger, surprise left out;
the text is scored as a user turn is in the pipeline (the shared encoder's vector of the text,
then the emotion model), and chatmon's ``frustration`` counts as ``anger``. Metrics:
``macro_f1`` over anger, fear, joy, neutral and sadness, ``accuracy``, ``f1_<class>``; the
confusion matrix (rows gold, columns predicted, in that class order) is under ``detail``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from detectors.empathy.emotion import CLASSES, EmotionModel, fold_to_classes
from pipeline.errors import EvalDataError
from pipeline.eval.core import EvalResult, require
from pipeline.scoring.suite import shared_encoder
from pipeline.settings import Settings

TRAINING_SPLIT = "train.tsv"


def read_goemotions(file: Path, names: list[str]) -> tuple[list[str], list[set[str]]]:
    """Texts and their Ekman label sets from one GoEmotions-format .tsv file."""
    texts, labels = [], []
    for line in file.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) < 2:
            continue
        texts.append(parts[0])
        labels.append({names[int(i)] for i in parts[1].split(",") if i.strip()})
    return texts, labels


def single_label(labels: set[str]) -> str | None:
    """The issue's measure: disgust folded into anger; one label left; surprise left out."""
    folded = {"anger" if lab == "disgust" else lab for lab in labels}
    if len(folded) != 1:
        return None
    (only,) = folded
    return only if only in CLASSES else None


def load_goemotions(path: Path) -> tuple[list[str], list[str], list[str]]:
    """(texts, gold classes, files read) over the folder's evaluation files."""
    (labels_file,) = require(path, "labels.txt")
    names = labels_file.read_text(encoding="utf-8").split()
    files = sorted(f for f in path.glob("*.tsv") if f.name != TRAINING_SPLIT)
    if not files:
        raise EvalDataError(f"{path}: no .tsv file to evaluate besides {TRAINING_SPLIT}")
    texts, gold = [], []
    for file in files:
        try:
            rows = zip(*read_goemotions(file, names), strict=True)
            for text, labels in rows:
                label = single_label(labels)
                if label is not None:
                    texts.append(text)
                    gold.append(label)
        except (ValueError, IndexError) as exc:
            raise EvalDataError(f"{file}: not GoEmotions format ({exc})") from exc
    if not texts:
        raise EvalDataError(f"{path}: no single-label comment in {[f.name for f in files]}")
    return texts, gold, [f.name for f in files]


def evaluate_goemotions(path: Path, settings: Settings) -> EvalResult:
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

    texts, gold, files = load_goemotions(path)
    model = EmotionModel.load()
    vectors = shared_encoder(settings.encoder_backend).encode(texts)
    pred = [CLASSES[int(np.argmax(fold_to_classes(model.user_emotion(v, t))))]
            for v, t in zip(vectors, texts, strict=True)]
    per_class = f1_score(gold, pred, labels=list(CLASSES), average=None)
    metrics = {"macro_f1": float(np.mean(per_class)), "accuracy": accuracy_score(gold, pred)}
    metrics.update({f"f1_{c}": float(v) for c, v in zip(CLASSES, per_class, strict=True)})
    detail = {
        "files": files,
        "classes": list(CLASSES),
        "support": [gold.count(c) for c in CLASSES],
        "confusion": confusion_matrix(gold, pred, labels=list(CLASSES)).tolist(),
        "skipped": [TRAINING_SPLIT] if (path / TRAINING_SPLIT).is_file() else [],
    }
    return EvalResult("goemotions", "empathy", len(texts), metrics, detail)
