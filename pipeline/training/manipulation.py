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


def read_tagged(name: str) -> list[tuple[str, str]]:
    """(tag, text) of each line of ``train_<name>.txt`` (tag<TAB>text lines; # comments)."""
    lines = (DATA_DIR / f"train_{name}.txt").read_text(encoding="utf-8").splitlines()
    out = []
    for ln in lines:
        if ln.strip() and not ln.startswith("#"):
            tag, text = ln.split("\t", 1)
            out.append((tag, text))
    return out


def read_examples(name: str) -> list[str]:
    """Texts of ``train_<name>.txt``."""
    return [text for _tag, text in read_tagged(name)]


def positive_weights(tags: Sequence[str], pos_weight: float, warm_manip_weight: float
                     ) -> np.ndarray:
    """Sample weight of each positive: ``pos_weight``, except the warm-on-the-surface ones
    (tag ``warm_manip``) at ``warm_manip_weight``. Each of those is a warm sentence plus a
    steering one, trained as one text: boosted like the rest, they taught the model that warm
    first-person sentences ("I'm so sorry you're hurting", "I really care about you") are
    manipulative. MentalManip dev AUROC (cached vectors, C 1, positive weight 7): 0.7173 with
    them at 7, 0.7177 at 1, 0.7168 without them; at 1 a warm manipulative face-validity reply
    falls under the cut, hence 4 (with positive weight 7.5)."""
    return np.array([warm_manip_weight if t == "warm_manip" else pos_weight for t in tags])


PLAIN_TAGS = frozenset({"ask", "short"})
PLAIN_WEIGHT = 1.0  # issue 39 (with --pos-weight 10), see docs/models/manipulation.md


def negative_weights(tags: Sequence[str], plain_weight: float) -> np.ndarray:
    """Sample weight of each authored negative: 1, except the plain support turns (tags
    ``ask``: a request for the details a task needs, ``short``: a short confirmation, refusal or
    acknowledgement) at ``plain_weight``. More weight quiets plain support turns further but
    lowers every score, warm and manipulative alike: at 2 (positive weight 7.5) MentalManip
    recall at the shipped cut fell 0.90 -> 0.85, and raising the positive weight to win it back
    (12) pushed a comfort reply of the warmth test over the cut. Hence 1, with positive weight
    10 (see docs/models/manipulation.md, "Plain requests and short replies")."""
    return np.array([plain_weight if t in PLAIN_TAGS else 1.0 for t in tags])


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
          c: float = 1.0, pos_weight: float = 1.0, weights: np.ndarray | None = None,
          version_tail: str = "") -> dict[str, object]:
    """Fit the logistic regression and write it as JSON; returns the blob. ``weights``: per
    sample (default 1, positives ``pos_weight``)."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels)
    if weights is None:
        weights = np.where(y == 1, pos_weight, 1.0)
    clf = LogisticRegression(C=c, max_iter=2000)
    clf.fit(vectors, y, sample_weight=weights)
    blob: dict[str, object] = {
        "version": f"lr-minilm-{len(y)}-c{c:g}-pw{pos_weight:g}{version_tail}",
        "about": about,
        "dim": int(vectors.shape[1]),
        "coef": [round(float(v), 6) for v in clf.coef_[0]],
        "intercept": round(float(clf.intercept_[0]), 6),
    }
    out.write_text(json.dumps(blob) + "\n")
    return blob


def build(pfg_dir: Path | None, pfg_share: float, out: Path, c: float,
          pos_weight: float, backend: str = "onnx-int8", warm_manip_weight: float = 4.0,
          plain_weight: float = PLAIN_WEIGHT) -> dict[str, object]:
    tagged, neg_tagged = read_tagged("pos"), read_tagged("neg")
    pos = [text for _tag, text in tagged]
    neg = [text for _tag, text in neg_tagged]
    pfg = persuasion_negatives(pfg_dir / "300_dialog.csv", pfg_share) if pfg_dir else []
    texts = pos + neg + pfg
    labels = [1] * len(pos) + [0] * (len(neg) + len(pfg))
    weights = np.concatenate([positive_weights([t for t, _ in tagged], pos_weight,
                                               warm_manip_weight),
                              negative_weights([t for t, _ in neg_tagged], plain_weight),
                              np.ones(len(pfg))])
    vectors = SentenceEncoder(backend=backend).encode(texts)
    about = (f"{len(pos)} authored positives ({sum(t == 'warm_manip' for t, _ in tagged)} "
             f"warm_manip at weight {warm_manip_weight:g}), {len(neg)} authored negatives "
             f"({sum(t in PLAIN_TAGS for t, _ in neg_tagged)} ask/short at weight "
             f"{plain_weight:g}), "
             f"{len(pfg)} PersuasionForGood persuader units (share {pfg_share:g} of dev dialogues)")
    return train(np.asarray(vectors), labels, out, about, c=c, pos_weight=pos_weight,
                 weights=weights,
                 version_tail=f"-wm{warm_manip_weight:g}-pl{plain_weight:g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pfg", type=Path, default=None, help="PersuasionForGood folder (Apache-2.0)")
    ap.add_argument("--pfg-share", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    # C 1, positive weight 10 (7.5 before the plain support negatives of issue 39: they take
    # 216 more negatives' weight, and 10 keeps MentalManip recall at the cut), warm_manip
    # positives at 4 (1.0: C 1, weight 3; 1.1: C 0.7, weight 7 for every positive). The warm
    # negatives pull emotional talk down, the positive weight keeps MentalManip recall at the
    # shipped cut; the warm-on-the-surface positives get less (see positive_weights), just
    # enough that every warm manipulative face-validity reply is still flagged. Chosen on
    # MentalManip dev (see docs/models/manipulation.md).
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--pos-weight", type=float, default=10.0)
    ap.add_argument("--warm-manip-weight", type=float, default=4.0,
                    help="sample weight of the warm_manip positives (the others: --pos-weight)")
    ap.add_argument("--backend", choices=BACKENDS, default="onnx-int8")
    ap.add_argument("--plain-weight", type=float, default=PLAIN_WEIGHT,
                    help="sample weight of the plain support negatives (tags ask, short)")
    args = ap.parse_args()
    blob = build(args.pfg, args.pfg_share, args.out, args.c, args.pos_weight, args.backend,
                 args.warm_manip_weight, args.plain_weight)
    print(f"wrote {args.out}: {blob['version']} ({blob['about']})")


if __name__ == "__main__":
    main()
