"""Rebuild ``detectors/data/manipulation/model.json`` (the sentence model's weights).

    python -m detectors.manipulation_train --pfg ../shared/evaldata/persuasionforgood/dev

Positives: ``train_pos.txt``; negatives: ``train_neg.txt`` (both written by the chatmon authors)
plus the persuader units of PersuasionForGood (Apache-2.0) from the dialogues whose id hashes
into the first ``--pfg-share`` (the rest stays unseen, to measure false positives honestly).
No MentalManip row is used here: its licence (CC BY-NC 4.0) allows measuring only.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from detectors.features import SentenceEncoder
from detectors.manipulation_model import MODEL_FILE, persuasion_negatives, read_examples, train


def build(pfg_dir: Path | None, pfg_share: float, out: Path, c: float,
          pos_weight: float) -> dict[str, object]:
    pos, neg = read_examples("pos"), read_examples("neg")
    pfg = persuasion_negatives(pfg_dir / "300_dialog.csv", pfg_share) if pfg_dir else []
    texts = pos + neg + pfg
    labels = [1] * len(pos) + [0] * (len(neg) + len(pfg))
    vectors = SentenceEncoder().encode(texts)
    about = (f"{len(pos)} authored positives, {len(neg)} authored negatives, {len(pfg)} "
             f"PersuasionForGood persuader units (share {pfg_share:g} of dev dialogues)")
    return train(np.asarray(vectors), labels, out, about, c=c, pos_weight=pos_weight)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pfg", type=Path, default=None, help="PersuasionForGood folder (Apache-2.0)")
    ap.add_argument("--pfg-share", type=float, default=0.5)
    ap.add_argument("--out", type=Path, default=MODEL_FILE)
    ap.add_argument("--c", type=float, default=1.0)
    ap.add_argument("--pos-weight", type=float, default=3.0)
    args = ap.parse_args()
    blob = build(args.pfg, args.pfg_share, args.out, args.c, args.pos_weight)
    print(f"wrote {args.out}: {blob['version']} ({blob['about']})")


if __name__ == "__main__":
    main()
