"""The optional model component of the manipulation detector: a logistic regression on the
shared all-MiniLM-L6-v2 sentence embeddings (``detectors.features``), shipped as plain JSON.

It is trained only on examples the chatmon authors wrote themselves
(``detectors/data/manipulation/train_*.txt``) and on the persuader turns of PersuasionForGood
(Apache-2.0) as negatives; see ``docs/models/manipulation.md``. MentalManip (CC BY-NC 4.0) is
used to measure and to pick the shipped threshold only. ``train`` rebuilds the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from detectors.base import DetectorError

DATA_DIR = Path(__file__).parent / "data" / "manipulation"
MODEL_FILE = DATA_DIR / "model.json"


class SentenceModel:
    """P(manipulative) for each sentence embedding; loads once from ``path``."""

    def __init__(self, path: Path = MODEL_FILE) -> None:
        self.path = Path(path)
        self.coef: np.ndarray | None = None
        self.intercept = 0.0
        self.version = "unloaded"

    def load(self) -> None:
        if self.coef is not None:
            return
        try:
            blob = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise DetectorError(f"manipulation model {self.path}: {exc}") from exc
        coef = np.asarray(blob["coef"], dtype=np.float32)
        if coef.shape != (blob["dim"],):
            raise DetectorError(f"manipulation model {self.path}: coef shape {coef.shape}")
        self.coef, self.intercept, self.version = coef, float(blob["intercept"]), blob["version"]

    def predict(self, vectors: np.ndarray) -> np.ndarray:
        """Probabilities, one per row of ``vectors`` (n x dim)."""
        if self.coef is None:
            raise DetectorError("manipulation model used before load()")
        if len(vectors) == 0:
            return np.zeros(0, dtype=np.float32)
        logits = np.asarray(vectors, dtype=np.float32) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-logits))


def read_examples(name: str) -> list[str]:
    """Texts of ``train_<name>.txt`` (tag<TAB>text lines; # comments)."""
    lines = (DATA_DIR / f"train_{name}.txt").read_text(encoding="utf-8").splitlines()
    return [ln.split("\t", 1)[1] for ln in lines if ln.strip() and not ln.startswith("#")]


def persuasion_negatives(dialog_csv: Path, keep: float = 1.0) -> list[str]:
    """Persuader units of PersuasionForGood (Apache-2.0) from dialogues whose id hashes into
    the first ``keep`` share, so that the rest stays unseen for measurement."""
    import csv
    import hashlib

    out: list[str] = []
    with dialog_csv.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            h = int(hashlib.sha256(row["B2"].encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
            if row["B4"] == "0" and h < keep and row["Unit"].strip():
                out.append(row["Unit"].strip())
    return out


def train(vectors: np.ndarray, labels: Sequence[int], out: Path, about: str,
          c: float = 1.0, pos_weight: float = 1.0) -> dict[str, object]:
    """Fit the logistic regression and write it as JSON; returns the blob."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels)
    weights = np.where(y == 1, pos_weight, 1.0)
    clf = LogisticRegression(C=c, max_iter=2000)
    clf.fit(vectors, y, sample_weight=weights)
    blob: dict[str, object] = {
        "version": f"lr-minilm-{len(y)}-c{c:g}-pw{pos_weight:g}",
        "about": about,
        "dim": int(vectors.shape[1]),
        "coef": [round(float(v), 6) for v in clf.coef_[0]],
        "intercept": round(float(clf.intercept_[0]), 6),
    }
    out.write_text(json.dumps(blob) + "\n")
    return blob
