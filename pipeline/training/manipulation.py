"""Rebuild ``detectors/manipulation/data/model.json`` (the sentence model's weights).

    python -m pipeline.training.manipulation --pfg ../shared/evaldata/persuasionforgood/dev

The sentences are encoded with the ``onnx-int8`` encoder by default: the pipeline scores with it
(``Settings.encoder_backend``), so the weights are fitted on the vectors they will be applied to.

Positives: ``train_pos.txt``; negatives: ``train_neg.txt`` (both written by the chatmon authors)
plus the persuader units of PersuasionForGood (Apache-2.0) from the dialogues whose id hashes
into the first ``--pfg-share`` (the rest stays unseen, to measure false positives honestly).
No MentalManip row is used here: its licence (CC BY-NC 4.0) allows measuring only.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from detectors.features import BACKENDS, SentenceEncoder
from detectors.manipulation.model import DATA_DIR, MODEL_FILE


def read_examples(name: str) -> list[str]:
    """Texts of ``train_<name>.txt`` (tag<TAB>text lines; # comments)."""
    lines = (DATA_DIR / f"train_{name}.txt").read_text(encoding="utf-8").splitlines()
    return [ln.split("\t", 1)[1] for ln in lines if ln.strip() and not ln.startswith("#")]


def persuasion_negatives(dialog_csv: Path, keep: float = 1.0) -> list[str]:
    """Persuader units of PersuasionForGood (Apache-2.0) from dialogues whose id hashes into
    the first ``keep`` share, so that the rest stays unseen for measurement."""
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


def build(pfg_dir: Path | None, pfg_share: float, out: Path, c: float,
          pos_weight: float, backend: str = "onnx-int8") -> dict[str, object]:
    pos, neg = read_examples("pos"), read_examples("neg")
    pfg = persuasion_negatives(pfg_dir / "300_dialog.csv", pfg_share) if pfg_dir else []
    texts = pos + neg + pfg
    labels = [1] * len(pos) + [0] * (len(neg) + len(pfg))
    vectors = SentenceEncoder(backend=backend).encode(texts)
    about = (f"{len(pos)} authored positives, {len(neg)} authored negatives, {len(pfg)} "
             f"PersuasionForGood persuader units (share {pfg_share:g} of dev dialogues)")
    return train(np.asarray(vectors), labels, out, about, c=c, pos_weight=pos_weight)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pfg", type=Path, default=None, help="PersuasionForGood folder (Apache-2.0)")
    ap.add_argument("--pfg-share", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    # C 0.7 and positive weight 7 (1.0 and 3 before the warm examples): the warm negatives
    # pull emotional talk down, the weight keeps MentalManip recall at the shipped cut
    ap.add_argument("--c", type=float, default=0.7)
    ap.add_argument("--pos-weight", type=float, default=7.0)
    ap.add_argument("--backend", choices=BACKENDS, default="onnx-int8")
    args = ap.parse_args()
    blob = build(args.pfg, args.pfg_share, args.out, args.c, args.pos_weight, args.backend)
    print(f"wrote {args.out}: {blob['version']} ({blob['about']})")


if __name__ == "__main__":
    main()
