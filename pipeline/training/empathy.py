"""``chatmon train``: opt-in models fitted on data the user is entitled to use.

``train_empathy(data_dir, out_dir)`` fits per-mechanism level heads (EPITOME levels 0-2) on
EPITOME-format CSVs (``emotional-reactions-reddit.csv``, ``interpretations-reddit.csv``,
``explorations-reddit.csv``) on top of the shipped offline empathy model, and writes
``out_dir/model.npz`` plus ``out_dir/LICENSE-NOTE.txt``. Use it with the detector option
``weights=<out_dir>/model.npz``.

Licence: EPITOME (Sharma et al. 2020, github.com/behavioral-data/Empathy-Mental-Health) is under
a non-commercial academic research licence. Weights trained on it inherit that restriction; they
are never shipped with chatmon. Only run this if you are entitled to use the data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

LICENSE_NOTE = (
    "These empathy level heads were trained with `chatmon train empathy` on {src}.\n"
    "If that is EPITOME (Sharma et al. 2020), its non-commercial academic research licence\n"
    "applies to these weights: do not use them commercially or redistribute them.\n"
)


def _features(model: object, texts: list[str], prompts: list[str]) -> np.ndarray:
    from detectors.empathy.analysis import analyse
    from detectors.empathy.emotion import EmotionModel
    from detectors.features import (
        PROMPT_EMBEDDING,
        SENTENCE_EMBEDDINGS,
        SENTENCES,
        SentenceEncoder,
        split_sentences,
    )
    from pipeline.scoring.suite import simple_input

    enc = SentenceEncoder()
    emotions = EmotionModel.load()
    spans = [split_sentences(t) for t in texts]
    flat = [t[s:e] for t, sp in zip(texts, spans, strict=True) for s, e in sp]
    vecs = iter(enc.encode(flat))
    prompt_vecs = iter(enc.encode(prompts))
    rows = []
    for text, prompt, sp in zip(texts, prompts, spans, strict=True):
        emb = np.stack([next(vecs) for _ in sp]) if sp else np.zeros((0, enc.dim), np.float32)
        turns = simple_input(text, prompt=prompt).context.prompt
        feats = {SENTENCES: sp, SENTENCE_EMBEDDINGS: emb, PROMPT_EMBEDDING: next(prompt_vecs)}
        a = analyse(model, emotions, text, turns, feats)  # type: ignore[arg-type]
        rows.append(model.head_features(emb, a.reply.mech))  # type: ignore[attr-defined]
    return np.stack(rows)


def train_empathy(data_dir: Path, out_dir: Path, c: float = 1.0) -> Path:
    """Fit the three level heads on EPITOME-format data in ``data_dir``; returns the weights
    file."""
    from sklearn.linear_model import LogisticRegression

    from detectors.empathy.model import MODEL_PATH, EmpathyModel
    from pipeline.eval.empathy_sets import load_epitome

    rows = load_epitome(Path(data_dir))
    model = EmpathyModel.load()
    x = _features(model, [r["text"] for r in rows], [r["prompt"] for r in rows])
    head_w = np.zeros((3, 3, x.shape[1]), dtype=np.float32)
    head_b = np.full((3, 3), -30.0, dtype=np.float32)  # a level never seen stays impossible
    for m, mech in enumerate(("er", "ip", "ex")):
        y = np.array([r[mech] for r in rows])
        clf = LogisticRegression(C=c, max_iter=3000, class_weight="balanced").fit(x, y)
        coef, icpt = clf.coef_, clf.intercept_
        if len(clf.classes_) == 2:  # binary: sklearn gives one row for the positive class
            coef, icpt = np.vstack([-coef / 2, coef / 2]), np.array([-icpt[0] / 2, icpt[0] / 2])
        for row, cls in enumerate(clf.classes_):
            head_w[m, int(cls)], head_b[m, int(cls)] = coef[row], icpt[row]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with np.load(MODEL_PATH) as base:
        arrays = {k: base[k] for k in base.files}
    out = out_dir / "model.npz"
    np.savez_compressed(out, **arrays, head_w=head_w, head_b=head_b)
    (out_dir / "LICENSE-NOTE.txt").write_text(LICENSE_NOTE.format(src=Path(data_dir).resolve()))
    return out
