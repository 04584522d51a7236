"""The optional model component of the manipulation detector: a logistic regression on the
shared all-MiniLM-L6-v2 sentence embeddings (``detectors.features``), shipped as plain JSON.

It is trained only on examples the chatmon authors wrote themselves
(``detectors/manipulation/data/train_*.txt``) and on the persuader turns of PersuasionForGood
(Apache-2.0) as negatives; see ``docs/models/manipulation.md``. MentalManip (CC BY-NC 4.0) is
used to measure and to pick the shipped threshold only. ``pipeline.training.manipulation``
rebuilds the JSON.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from detectors.base import DetectorError

DATA_DIR = Path(__file__).parent / "data"
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
